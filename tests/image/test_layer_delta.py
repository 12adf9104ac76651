"""Side-loading only the layers a node lacks, against real containerd and runc: this host's containerd 1.6
(Debian 12) and containerd 2.x (Debian testing's build, unpacked by scripts/install-test-deps.sh), whose
`ctr images import` goes through the transfer service instead of the client-side importer.

Real: the scheduler image built by buildah (on the stand-in base, see conftest.py), `ctr images import` of
the docker-archive and of our OCI archive, the side-load's own import command (deploys.scheduler_image) run
by a shell as on a node, `ctr images ls` / `ctr content ls` read by the same parser the side-load's fact
uses, and `ctr run`. The second image is the first plus one layer (tests/deploys/docker_archives.derive_archive),
as a rebuild after a change to scheduler/ adds new top layers on the same base and dependency layers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deploys.image_archive import held_blobs, normalized_name, read_archive, write_oci_archive
from deploys.scheduler_image import _import_command
from tests.deploys.docker_archives import derive_archive, layer_tar
from tests.image.base import containerd2_bin, private_containerd

pytestmark = pytest.mark.image

NEXT = "localhost/kubelab-delta-test:2"
PROBE = b"inner loop round 2\n"


@pytest.fixture(scope="module")
def next_archive(built, tmp_path_factory):
    """The built image plus a layer holding /kubelab-probe.txt."""
    out = tmp_path_factory.mktemp("derived")
    return read_archive(derive_archive(built.archive, out / "next.tar", NEXT, layer_tar({"kubelab-probe.txt": PROBE})))


@pytest.fixture(params=["1.6 (host)", "2.x (Debian testing)"])
def containerd(request, image_tools, tmp_path):
    """A private containerd of each build; the test prints which version answered."""
    bin_dir = containerd2_bin() if request.param.startswith("2") else None
    with private_containerd(tmp_path / "containerd", bin_dir) as running:
        print(f"\ncontainerd {running.version}")
        yield running


def import_as_a_node_does(containerd, archive: Path, name: str) -> subprocess.CompletedProcess:
    """The side-load's import command, run by a shell with the upload in place, as pyinfra runs it."""
    return subprocess.run(["sh", "-c", _import_command(str(archive), normalized_name(name))], env=containerd.env,
                          capture_output=True, text=True, check=False)


def held(containerd) -> set[str]:
    return held_blobs(containerd.ctr("images", "ls"), containerd.ctr("content", "ls"))


def image_target(containerd, name: str) -> str:
    return containerd.ctr("images", "ls", f"name=={name}").splitlines()[1].split()[2]


def test_a_node_with_the_earlier_image_gets_only_the_new_layer(built, next_archive, containerd, tmp_path) -> None:
    containerd.ctr("images", "import", str(built.archive))
    first = read_archive(built.archive)
    assert {first.image_id, *(layer.digest for layer in first.layers)} <= held(containerd)

    delta = tmp_path / "delta.tar"
    carried = write_oci_archive(next_archive, NEXT, held(containerd), delta)
    assert carried == [next_archive.layers[-1]]
    assert delta.stat().st_size < 64 * 1024 < built.archive.stat().st_size

    done = import_as_a_node_does(containerd, delta, NEXT)
    assert done.returncode == 0, done.stderr
    assert not delta.exists()  # the upload is removed
    out = containerd.ctr("run", "--rm", NEXT, "delta-check", "cat", "/kubelab-probe.txt")
    assert out.encode() == PROBE
    assert next_archive.image_id in containerd.ctr("content", "get", image_target(containerd, NEXT))

    # The same manifest as containerd writes when it imports the whole docker-archive itself.
    target = image_target(containerd, NEXT)
    containerd.ctr("images", "rm", NEXT)
    containerd.ctr("images", "import", str(next_archive.path))
    assert image_target(containerd, NEXT) == target


def test_containerd_really_needs_the_layers_left_out(next_archive, containerd, tmp_path) -> None:
    """A node without the earlier image cannot take the short archive: the layers were really left out."""
    delta = tmp_path / "delta.tar"
    write_oci_archive(next_archive, NEXT, {layer.digest for layer in next_archive.layers[:-1]}, delta)
    failed = import_as_a_node_does(containerd, delta, NEXT)
    assert failed.returncode != 0 and "not found" in failed.stderr, failed.stderr
    # Nothing left that the next run could take for the image being present, and no upload.
    assert NEXT not in containerd.ctr("images", "ls", "--quiet").split()
    assert not delta.exists()
