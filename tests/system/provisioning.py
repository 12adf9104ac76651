"""Provisioning the system suite's lab from sources on the host: what every provisioning test shares.

- `local_sources(lxc_lab, served_dir)`: serves, from the host's bridge address, the STAND-IN kubeadm,
  kubelet and kubectl packages as a signed apt repository and a STAND-IN Calico operator manifest (see
  tests/system/test_provision.py's docstring for what they prove), plus an apt relay to Debian's mirror;
  yields `LocalSources` with the lab pointed at them.
- `prepare_machines(lxc_lab, relay)`: the test setup that is not the product (the apt relay setting and an
  extra swap line in each machine's fstab), done over the Vagrant lab's own SSH details.
- `on(state, node, command)`: a read-only command on a node as root, its stdout.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from labdef.lab import Lab, parse_lab
from tests.deploys.http_servers import RunningServer, serve_apt_relay, serve_directory
from tests.deploys.standin_repo import StandinRepo, build_standin_repo
from tests.system.conftest import RunningLab

RELAY_CONF = "/etc/apt/apt.conf.d/00kubelab-systest-relay"
TEST_SWAP_LINE = "/swapfile none swap sw 0 0"
OPERATOR_STANDIN = """\
# STAND-IN for Calico's tigera-operator.yaml, served by kubelab's system tests: the deploy downloads and
# applies it like the real manifest; the stand-in kubectl only records that. This is not Calico.
apiVersion: v1
kind: Namespace
metadata:
  name: tigera-operator
"""


@dataclass
class LocalSources:
    lab: Lab  # the suite's lab with package_source and the operator manifest served from the host
    repo: StandinRepo
    relay: RunningServer


def lab_with_local_sources(lab: Lab, base_url: str) -> Lab:
    data = lab.model_dump(mode="json")
    data["kubernetes"]["package_source"] = base_url + "/k8s/v{minor}/"
    data["cni"]["operator_manifest_url"] = base_url + "/calico/{version}/tigera-operator.yaml"
    return parse_lab(data, "system test lab")


@contextmanager
def local_sources(lxc_lab: RunningLab, served: Path) -> Iterator[LocalSources]:
    host_ip = str(lxc_lab.host_address.ip)
    k8s = lxc_lab.lab.kubernetes
    repo = build_standin_repo(served / "k8s" / f"v{k8s.minor}", k8s.version, k8s.package_revision)
    operator = served / "calico" / lxc_lab.lab.cni.calico_version / "tigera-operator.yaml"
    operator.parent.mkdir(parents=True)
    operator.write_text(OPERATOR_STANDIN)
    files = serve_directory(served, host_ip)
    relay = serve_apt_relay(host_ip)
    try:
        yield LocalSources(lab_with_local_sources(lxc_lab.lab, f"http://{host_ip}:{files.port}"), repo, relay)
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
