"""Side-loading the scheduler image onto the lxc lab's nodes for real, twice.

Real: the image built by buildah on this host (tests/image/base.py: on a STAND-IN base, Debian bookworm +
Debian's python3 from debootstrap, because the pinned public python:3.12-slim cannot be pulled here), the
upload over SSH by pyinfra (deploys/scheduler_image.py through labkit.scheduler_deploy.image_delivery.side_load:
the docker-archive, or an OCI archive without the layers a node holds), `ctr -n k8s.io images import` by the
containerd installed from Debian inside each lxc machine, and the check that containerd's k8s.io namespace (what the kubelet's CRI
reads) holds the image under its reference with the right image ID. The second run must skip both nodes.

Not here: running the image in the machines (`ctr run` inside lxc machines fails on cgroup errors on
these hosts), and the kubelet itself (none can run here); tests/image/ runs the image with runc on the host.
If the provisioning test has not installed containerd in the machines yet, this test installs Debian's
containerd through an apt relay on the host (test setup, not the product).
"""

from __future__ import annotations

import platform
import shlex
import time

import pytest

from labkit.image import (
    BaseImage,
    Builder,
    BuiltImage,
    archive_image_id,
    archive_repo_tags,
    build_image,
    plan_build,
    scheduler_version,
)
from labkit.inventory import pyinfra_inventory
from labkit.pyinfra_run import NodeFailures
from labkit.scheduler_deploy.image_delivery import build_in_vm, node_platform, side_load
from tests.deploys.docker_archives import write_docker_archive
from tests.deploys.http_servers import serve_apt_relay
from tests.image.base import (
    check_image_tools,
    config_blob_digest,
    private_containerd,
    run,
    shared_buildah_and_base,
)
from tests.system.conftest import TIMINGS, RunningLab

pytestmark = pytest.mark.system


def on(state, node: str, command: str) -> str:
    host = state.inventory.get_host(node)
    ok, output = host.run_shell_command(command, _sudo=True)
    assert ok, f"{node}: `{command}` failed: {output.stderr}"
    return output.stdout


def apt_install(lxc_lab: RunningLab, state, node: str, packages: str) -> None:
    """Test setup: the machines reach Debian's mirror only through a relay on the host."""
    relay = serve_apt_relay(str(lxc_lab.host_address.ip))
    proxy = f"-o Acquire::http::Proxy=http://{lxc_lab.host_address.ip}:{relay.port}/"
    try:
        on(state, node, f"apt-get {proxy} update -q && DEBIAN_FRONTEND=noninteractive "
                        f"apt-get {proxy} install -y -q --no-install-recommends {packages}")
    finally:
        relay.stop()


def ensure_containerd(lxc_lab: RunningLab) -> None:
    """Debian's containerd in every machine (test setup when provisioning has not run in this session)."""
    state = lxc_lab.pyinfra_state()
    missing = [h.name for h in state.inventory if not h.run_shell_command("command -v ctr")[0]]
    if not missing:
        return
    for node in missing:
        apt_install(lxc_lab, state, node, "containerd")
        on(state, node, "systemctl start containerd && ctr version")


@pytest.fixture(scope="module")
def host_buildah() -> tuple[Builder, BaseImage]:
    check_image_tools()
    return shared_buildah_and_base()


@pytest.fixture(scope="module")
def image(host_buildah: tuple[Builder, BaseImage], tmp_path_factory) -> BuiltImage:
    builder, base = host_buildah
    started = time.monotonic()
    built = build_image(tmp_path_factory.mktemp("images"), base=base, builder=builder, log=lambda line: None)
    TIMINGS["scheduler image build (buildah, context + wheels + build)"] = time.monotonic() - started
    return built


def test_side_load_imports_on_every_node_then_skips_them(lxc_lab: RunningLab, image: BuiltImage) -> None:
    ensure_containerd(lxc_lab)
    nodes = sorted(node.name for node in lxc_lab.lab.nodes)
    # Another test may have imported this very image (the inner loop builds the same tree): start without it.
    state = lxc_lab.pyinfra_state()
    for node in nodes:
        on(state, node, f"ctr -n k8s.io images rm {shlex.quote(image.ref)} >/dev/null 2>&1 || true")
    outcomes, seconds = [], []
    for attempt in ("first", "second"):
        lines: list[str] = []
        started = time.monotonic()
        outcomes.append(side_load(pyinfra_inventory(lxc_lab.groups()), image, echo=lines.append))
        seconds.append(time.monotonic() - started)
        TIMINGS[f"side-load to {len(nodes)} nodes, {attempt} run"] = seconds[-1]

    assert outcomes[0] == dict.fromkeys(nodes, "imported")
    assert outcomes[1] == dict.fromkeys(nodes, "present")

    state = lxc_lab.pyinfra_state()
    name = shlex.quote(f"name=={image.ref}")
    for node in nodes:
        listing = on(state, node, f"ctr -n k8s.io images ls {name}")
        assert image.ref in listing, f"{node}: {image.ref} missing from containerd's k8s.io namespace"
        digest = listing.splitlines()[1].split()[2]
        manifest = on(state, node, f"ctr -n k8s.io content get {digest}")
        assert image.image_id in manifest, f"{node}: {image.ref} has another config than {image.image_id}"
        # the upload is removed after the import
        assert on(state, node, "ls -A /var/lib/kubelab/images").strip() == ""


def test_the_nodes_say_which_platform_to_build_for(lxc_lab: RunningLab) -> None:
    """deploy-scheduler builds for the nodes' architecture, read over SSH (`uname -m`) from every node."""
    assert node_platform(pyinfra_inventory(lxc_lab.groups()), echo=lambda line: None) == {
        "x86_64": "linux/amd64", "aarch64": "linux/arm64"}[platform.machine()]


def test_build_in_the_control_plane_vm(lxc_lab: RunningLab, host_buildah: tuple[Builder, BaseImage],
                                       tmp_path) -> None:
    """The path for hosts without docker, podman or buildah: buildah installed in the control-plane machine
    builds from a context prepared on the host; the archive comes back and runs on the host's runc.

    Test setup (not the product): buildah preinstalled through the apt relay, because the product's own
    `apt.packages` step reaches the mirror only through the node's apt configuration; and the stand-in base
    image loaded into the machine's buildah store, because the machine cannot pull the public base.
    """
    builder, base = host_buildah
    cp = lxc_lab.lab.control_plane.name
    state = lxc_lab.pyinfra_state()
    apt_install(lxc_lab, state, cp, "buildah")
    base_archive = tmp_path / "base.tar"
    run(["buildah", *builder.global_args, "push", "--quiet", base.ref, f"docker-archive:{base_archive}:{base.ref}"])
    state.inventory.get_host(cp).put_file(str(base_archive), "/tmp/kubelab-base.tar", _sudo=True)
    on(state, cp, "{ buildah info >/dev/null 2>&1 || export STORAGE_DRIVER=vfs; } && "
                  "buildah pull --quiet docker-archive:/tmp/kubelab-base.tar && rm /tmp/kubelab-base.tar")

    lines: list[str] = []
    started = time.monotonic()
    plan = plan_build(tmp_path / "images", "localhost/kubelab-scheduler", base)
    built = build_in_vm(pyinfra_inventory(lxc_lab.groups()), plan, echo=lines.append)
    TIMINGS["scheduler image build in the control-plane machine (context, upload, build, fetch)"] = (
        time.monotonic() - started)

    assert built.builder == "vm"
    assert archive_repo_tags(built.archive) == [built.ref]
    assert built.image_id == config_blob_digest(built.archive)
    with private_containerd(tmp_path / "ctd") as containerd:
        containerd.ctr("images", "import", str(built.archive))
        out = containerd.ctr("run", "--rm", built.ref, "vm-built", "python", "-m", "scheduler", "--version")
    assert scheduler_version() in out


def test_a_failed_import_names_the_node_and_shows_containerds_answer(lxc_lab: RunningLab, tmp_path) -> None:
    """An archive the host can read but containerd cannot unpack (a layer that claims gzip and is not): the
    import fails on the node, the error says where and what containerd answered, and nothing of it stays."""
    ensure_containerd(lxc_lab)
    archive = write_docker_archive(tmp_path / "broken.tar", "localhost/broken:1", [b"\x1f\x8b" + b"not gzip" * 8])
    broken = BuiltImage("localhost/broken:1", archive, archive_image_id(archive), "test", 0.0)
    with pytest.raises(NodeFailures) as err:
        side_load(pyinfra_inventory(lxc_lab.groups()), broken, echo=lambda line: None)
    text = str(err.value)
    assert lxc_lab.lab.control_plane.name in text
    assert "Import the image into containerd" in text
    assert "failed to extract layer" in text, text  # containerd's own words come through
    # containerd 1.6 records the image before it unpacks it: that record must not outlive the failure (the
    # next run would take it for the image being there), nor may the upload.
    state = lxc_lab.pyinfra_state()
    for node in sorted(node.name for node in lxc_lab.lab.nodes):
        assert "localhost/broken:1" not in on(state, node, "ctr -n k8s.io images ls -q"), node
        assert on(state, node, "ls -A /var/lib/kubelab/images").strip() == "", node
