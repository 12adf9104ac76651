"""Provisioning for real on the lxc lab: `labkit.provision.run` twice against the two machines.

Real: pyinfra over SSH into two Debian machines (lxc system containers, see tests/system/conftest.py);
containerd, curl and their dependencies installed by apt from Debian's own packages (the machines have no
route out, so their apt reaches Debian's mirror through a relay on the host that forwards only to the
mirrors the host's apt uses); containerd's config regenerated with SystemdCgroup, CRI and kubeadm's sandbox
image, and crictl pointed at it; Debian's containerd 1.6.20 is below Kubernetes 1.36's floor, which the
suite's lab accepts explicitly (containerd.allow_below_floor: the run warns instead of stopping); kernel module
and sysctl files, net.* sysctls applied inside each machine; the overlay and br_netfilter modules found
built into the kernel (these machines cannot load modules, and the deploy says so); a swap entry commented
out in fstab; the Kubernetes apt repository with its keyring under /etc/apt/keyrings and signed-by,
fetched and verified by the machines' apt over HTTP; packages pinned and held; the kubelet's node IP;
the admin kubeconfig in a ~/.kube the login user owns; the kubeconfig exported to the host; a second run that
changes nothing.

STAND-IN: the kubeadm, kubelet and kubectl packages are tiny scripts (tests/deploys/standin/) served as a
signed apt repository from the host's bridge address, because these machines can neither download
pkgs.k8s.io nor run a kubelet. They prove the orchestration only: `kubeadm init` runs once on the control
plane, the join token minted there during the run is the one the worker's `kubeadm join` receives, join
runs once, the Calico manifests are downloaded and applied once. The Calico operator manifest served here
is a stand-in too. Readiness waiting (nodes Ready, Calico and CoreDNS pods) needs a real cluster and is not
run here; tests/deploys/test_readiness.py covers its logic.

Test setup that is not the product: the apt relay setting and an extra swap line in each machine's fstab.
"""

from __future__ import annotations

import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from deploys import files as f
from deploys.containerd_config import runc_options, sandbox_image
from labdef.lab import Lab, parse_lab
from labkit.inventory import pyinfra_inventory
from labkit.provision import ProvisionReport, run
from labkit.pyinfra_run import NodeFailures
from tests.deploys.standin_repo import StandinRepo
from tests.system.conftest import TIMINGS, RunningLab
from tests.system.provisioning import TEST_SWAP_LINE, local_sources, on, prepare_machines

pytestmark = pytest.mark.system


@dataclass
class Runs:
    lab: Lab
    repo: StandinRepo
    reports: list[ProvisionReport] = field(default_factory=list)
    outputs: list[list[str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


@pytest.fixture(scope="module")
def runs(lxc_lab: RunningLab, tmp_path_factory) -> Runs:
    with local_sources(lxc_lab, tmp_path_factory.mktemp("served")) as sources:
        prepare_machines(lxc_lab, sources.relay)
        result = Runs(sources.lab, sources.repo)
        for attempt in ("first", "second"):
            lines: list[str] = []
            started = time.monotonic()
            report = run(sources.lab, pyinfra_inventory(lxc_lab.groups()), wait_ready=False, echo=lines.append)
            result.seconds.append(time.monotonic() - started)
            TIMINGS[f"provision, {attempt} run"] = result.seconds[-1]
            result.reports.append(report)
            result.outputs.append(lines)
        yield result


@pytest.fixture(scope="module")
def ssh(runs: Runs, lxc_lab: RunningLab):
    """One pyinfra connection to each machine for the checks (after both runs)."""
    return lxc_lab.pyinfra_state()


def test_node_prep_is_real_on_both_machines(runs: Runs, ssh):
    lab = runs.lab
    for node in lab.nodes:
        status = on(ssh, node.name, "dpkg-query -W -f '${Version} ${db:Status-Status}' containerd curl")
        assert status.count("installed") == 2, status
        config = tomllib.loads(on(ssh, node.name, f"cat {f.CONTAINERD_CONFIG}"))
        assert runc_options(config)["SystemdCgroup"] is True
        assert "cri" not in config.get("disabled_plugins", [])
        assert sandbox_image(config) == f.sandbox_image(lab)  # Debian's 1.6.20 ships pause:3.6
        assert on(ssh, node.name, f"cat {f.CRICTL_CONFIG}") == f.crictl_config().rstrip("\n")
        assert on(ssh, node.name, "systemctl is-active containerd").strip() == "active"
        plugins = [line.split() for line in on(ssh, node.name, "ctr plugins ls").splitlines()]
        assert ["io.containerd.grpc.v1", "cri", "ok"] in [[p[0], p[1], p[-1]] for p in plugins if len(p) > 2]

        assert on(ssh, node.name, f"cat {f.MODULES_FILE}") == f.modules_load().rstrip("\n")
        assert on(ssh, node.name, f"cat {f.SYSCTL_FILE}") == f.sysctl_conf().rstrip("\n")
        in_effect = on(ssh, node.name, "sysctl -n " + " ".join(f.SYSCTLS)).split()
        assert in_effect == ["1", "1", "1"]  # net.* sysctls are per network namespace: set inside the node

        fstab = on(ssh, node.name, "cat /etc/fstab").splitlines()
        assert f"#{TEST_SWAP_LINE}" in fstab and TEST_SWAP_LINE not in fstab

        assert on(ssh, node.name, f"cat {f.KEYRING}") == runs.repo.key_file.read_text().rstrip("\n")
        assert on(ssh, node.name, f"cat {f.APT_SOURCE}") == f.apt_source(lab).rstrip("\n")
        versions = on(ssh, node.name, "dpkg-query -W -f '${Package}=${Version}\\n' kubeadm kubelet kubectl")
        assert sorted(versions.split()) == sorted(f.kube_package_specs(lab))
        assert on(ssh, node.name, "apt-mark showhold").split() == ["kubeadm", "kubectl", "kubelet"]
        assert on(ssh, node.name, f"cat {f.KUBELET_DEFAULTS}") == f.kubelet_defaults(node).rstrip("\n")
        assert on(ssh, node.name, "systemctl is-enabled kubelet").strip() == "enabled"

    init_line = next(line for line in runs.outputs[0] if "| kubeadm init:" in line)
    assert init_line.endswith(f": {lab.control_plane.name} changed")  # workers skip it, and say nothing
    (floor_line,) = [line for line in runs.outputs[0] if "| containerd meets Kubernetes 1.36:" in line]
    assert floor_line.count("warning: containerd 1.6.20~ds1 is installed, below what Kubernetes 1.36 needs") == 2
    assert "going on because containerd.allow_below_floor is true" in floor_line
    module_lines = [line for line in runs.outputs[0] if "| Kernel module " in line]
    assert module_lines and all("built into the kernel" in line for line in module_lines), module_lines


def test_init_once_token_reaches_the_worker_join_once(runs: Runs, ssh):
    """Against the STAND-IN kubeadm/kubectl (see the module docstring)."""
    lab = runs.lab
    cp, (worker,) = lab.control_plane.name, [n.name for n in lab.workers]
    assert on(ssh, cp, "cat /var/lib/kubeadm-standin/invocations").splitlines() == [
        f"init --config {f.KUBEADM_INIT_CONFIG}", "token create --ttl 1h --print-join-command"]
    (token,) = on(ssh, cp, "cat /var/lib/kubeadm-standin/tokens").split()
    assert on(ssh, worker, "cat /var/lib/kubeadm-standin/invocations").splitlines() == [
        f"join --config {f.KUBEADM_JOIN_CONFIG}"]
    assert on(ssh, worker, "cat /var/lib/kubeadm-standin/joined-with-token").strip() == token
    assert on(ssh, worker, f"test -e {f.KUBEADM_JOIN_CONFIG} && echo left || echo removed").strip() == "removed"
    assert runs.reports[0].joined == [worker]

    init = {d["kind"]: d for d in yaml.safe_load_all(on(ssh, cp, f"cat {f.KUBEADM_INIT_CONFIG}"))}
    assert init["InitConfiguration"]["localAPIEndpoint"]["advertiseAddress"] == str(lab.control_plane.ip)
    assert on(ssh, cp, f"sha256sum < {f.ADMIN_CONF}") == on(ssh, cp, "sha256sum < ~vagrant/.kube/config")
    assert on(ssh, cp, "stat -c '%U %a' ~vagrant/.kube ~vagrant/.kube/config").split() == ["vagrant", "700",
                                                                                          "vagrant", "600"]

    kubectl = on(ssh, cp, "cat /var/lib/kubectl-standin/invocations").splitlines()
    assert kubectl[0] == f"--kubeconfig {f.ADMIN_CONF} get -f {f.TIGERA_OPERATOR} -o name"
    applied = [line for line in kubectl if " apply" in line]
    assert applied == [f"--kubeconfig {f.ADMIN_CONF} apply --server-side --force-conflicts -f {f.TIGERA_OPERATOR}",
                       f"--kubeconfig {f.ADMIN_CONF} apply -f {f.CALICO_INSTALLATION}"]
    installation = yaml.safe_load_all(on(ssh, cp, "cat /var/lib/kubectl-standin/applied/calico-installation.yaml"))
    pool = next(installation)["spec"]["calicoNetwork"]["ipPools"][0]
    assert pool["cidr"] == str(lab.network.pod_cidr)

    exported = yaml.safe_load(Path(runs.reports[0].kubeconfig).read_text())
    assert exported["current-context"] == lab.name
    assert exported["clusters"][0]["cluster"]["server"] == f"https://{lab.control_plane.ip}:6443"


def test_second_run_changes_nothing(runs: Runs, ssh):
    assert runs.reports[0].changed
    assert runs.reports[1].changes == {}, runs.reports[1].changes
    assert "no changes" in runs.outputs[1]
    assert runs.reports[1].joined == []
    cp, worker = runs.lab.control_plane.name, runs.lab.workers[0].name
    assert len(on(ssh, cp, "cat /var/lib/kubeadm-standin/invocations").splitlines()) == 2
    assert len(on(ssh, worker, "cat /var/lib/kubeadm-standin/invocations").splitlines()) == 1
    print("\n".join(["first run:", *runs.outputs[0], "second run:", *runs.outputs[1]]))
    print(f"provision: first run {runs.seconds[0]:.1f} s, second run {runs.seconds[1]:.1f} s")


def test_a_failing_step_names_node_step_and_output(runs: Runs, lxc_lab: RunningLab):
    """A package version the repository does not have: apt's own error must reach the user."""
    data = runs.lab.model_dump(mode="json")
    data["kubernetes"]["package_revision"] = "9.9"
    broken = parse_lab(data, "system test lab, unknown package revision")
    with pytest.raises(NodeFailures) as err:
        run(broken, pyinfra_inventory(lxc_lab.groups()), wait_ready=False, echo=lambda line: None)
    message = str(err.value)
    missing = broken.kubernetes.package_version
    for node in broken.nodes:
        assert f"{node.name}: Kubernetes cluster | Node prep | Install kubelet, kubeadm, kubectl {missing} failed" \
            in message
    assert "command: " in message and f"--allow-change-held-packages kubelet={missing}" in message
    assert f"Version '{missing}' for 'kubelet' was not found" in message
