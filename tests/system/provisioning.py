"""Provisioning the system suite's lab from sources on the host: what every provisioning test shares.

- `local_sources(lxc_lab, served_dir)`: serves, from the host's bridge address, the STAND-IN kubeadm,
  kubelet and kubectl packages as a signed apt repository (see tests/system/test_provision.py's docstring
  for what they prove) and the REAL Calico release files of every release in tests.reference (copied at
  test time from ../shared/reference/, never into the repository; without them the test skips, or fails
  under CI=true), plus an apt relay to Debian's mirror; yields `LocalSources` with the lab pointed at them.
- `prepare_machines(lxc_lab, relay)`: the test setup that is not the product (the apt relay setting and an
  extra swap line in each machine's fstab), done over the Vagrant lab's own SSH details.
- `on(state, node, command)`: a read-only command on a node as root, its stdout.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from deploys.files import CALICO_RELEASE_MANIFESTS
from labdef.lab import Lab, parse_lab
from tests.deploys.http_servers import RunningServer, serve_apt_relay, serve_directory
from tests.deploys.standin_repo import StandinRepo, build_standin_repo
from tests.reference import CALICO_RELEASES, calico_manifests
from tests.system.conftest import RunningLab

RELAY_CONF = "/etc/apt/apt.conf.d/00kubelab-systest-relay"
TEST_SWAP_LINE = "/swapfile none swap sw 0 0"


@dataclass
class LocalSources:
    lab: Lab  # the suite's lab with package_source and the Calico manifests served from the host
    repo: StandinRepo
    relay: RunningServer
    base_url: str

    def lab_with_calico(self, version: str) -> Lab:
        """The same lab pinning another of the served Calico releases."""
        return lab_with_local_sources(self.lab, self.base_url, calico_version=version)


def lab_with_local_sources(lab: Lab, base_url: str, calico_version: str | None = None,
                           kubernetes_version: str | None = None) -> Lab:
    data = lab.model_dump(mode="json")
    data["kubernetes"]["package_source"] = base_url + "/k8s/v{minor}/"
    data["kubernetes"]["version"] = kubernetes_version or lab.kubernetes.version
    data["cni"]["manifests_url"] = base_url + "/calico/{version}/manifests"
    data["cni"]["calico_version"] = calico_version or lab.cni.calico_version
    return parse_lab(data, f"system test lab, Kubernetes {data['kubernetes']['version']}, "
                           f"Calico {data['cni']['calico_version']}")


def copy_calico_releases(served: Path) -> None:
    for version in CALICO_RELEASES:
        folder = served / "calico" / version / "manifests"
        folder.mkdir(parents=True)
        for name in CALICO_RELEASE_MANIFESTS:
            shutil.copy(calico_manifests(version) / name, folder / name)


@contextmanager
def local_sources(lxc_lab: RunningLab, served: Path, kubernetes_version: str | None = None,
                  calico_version: str | None = None) -> Iterator[LocalSources]:
    """The lab's own versions unless given (the stand-in packages are built for that Kubernetes version)."""
    host_ip = str(lxc_lab.host_address.ip)
    copy_calico_releases(served)
    files = serve_directory(served, host_ip)
    relay = serve_apt_relay(host_ip)
    base_url = f"http://{host_ip}:{files.port}"
    try:
        lab = lab_with_local_sources(lxc_lab.lab, base_url, calico_version, kubernetes_version)
        k8s = lab.kubernetes
        repo = build_standin_repo(served / "k8s" / f"v{k8s.minor}", k8s.version, k8s.package_revision)
        yield LocalSources(lab, repo, relay, base_url)
    finally:
        files.stop()
        relay.stop()


def prepare_machines(lxc_lab: RunningLab, relay: RunningServer) -> None:
    host_ip = str(lxc_lab.host_address.ip)
    relay_conf = (f'Acquire::http::Proxy "http://{host_ip}:{relay.port}/";\\n'
                  f'Acquire::http::Proxy::{host_ip} "DIRECT";\\nAcquire::http::Pipeline-Depth "0";\\n')
    state = lxc_lab.pyinfra_state()
    for host in state.inventory:
        for command in (f"printf '{relay_conf}' > {RELAY_CONF}",
                        f"grep -q '{TEST_SWAP_LINE}' /etc/fstab || echo '{TEST_SWAP_LINE}' >> /etc/fstab"):
            ok, output = host.run_shell_command(command, _sudo=True)
            assert ok, f"{host.name}: test setup `{command}` failed: {output.stderr}"


def on(state, node: str, command: str) -> str:
    """Run a read-only command on a node as root and return its stdout (fails the test on error)."""
    host = state.inventory.get_host(node)
    ok, output = host.run_shell_command(command, _sudo=True)
    assert ok, f"{node}: `{command}` failed: {output.stderr}"
    return output.stdout
