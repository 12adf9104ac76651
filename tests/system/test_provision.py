"""Provisioning for real on the lxc lab: `labkit.provision.run` four times against the two machines.

Real: pyinfra over SSH into two Debian machines (lxc system containers, see tests/system/conftest.py);
containerd, curl and their dependencies installed by apt from Debian's own packages (the machines have no
route out, so their apt reaches Debian's mirror through a relay on the host that forwards only to the
mirrors the host's apt uses); containerd's config regenerated with SystemdCgroup, CRI and kubeadm's sandbox
image, and crictl pointed at it; Debian's containerd 1.6.20 is below Kubernetes 1.35's floor, which the
suite's lab accepts explicitly (containerd.allow_below_floor: the run warns instead of stopping); kernel module
and sysctl files, net.* sysctls applied inside each machine; the overlay and br_netfilter modules found
built into the kernel (these machines cannot load modules, and the deploy says so); a swap entry commented
out in fstab; the Kubernetes apt repository with its keyring under /etc/apt/keyrings and signed-by,
fetched and verified by the machines' apt over HTTP; packages pinned and held; the kubelet's node IP;
the admin kubeconfig in a ~/.kube the login user owns; the kubeconfig exported to the host. The Calico
manifests are the REAL release files of v3.30.3 and v3.32.1 (operator-crds.yaml, tigera-operator.yaml),
read from ../shared/reference/ at test time and served to the machines over HTTP from the host; without
that folder the module skips (fails under CI=true).

STAND-IN: the kubeadm, kubelet and kubectl packages are small scripts (tests/deploys/standin/, whose
headers say what each models) served as a signed apt repository from the host's bridge address, because
these machines can neither download pkgs.k8s.io nor run a kubelet. kubectl keeps the objects of every
manifest applied and answers NotFound (or "no matches for kind ... ensure CRDs are installed first") for
anything else, as kubectl does; kubeadm writes what real init writes, in order, and creates init's objects.
The runs:
  1. Kubernetes 1.35 (the newest minor both Calico releases support) and Calico v3.30.3, with the kubeadm
     stand-in told to fail after writing admin.conf (as a real init does when the control plane never
     comes up): the run fails at `kubeadm init`, naming it.
  2. The same lab: the partial init is reset and init runs to the end; Calico's CRDs, the operator and
     the Installation are applied in that order; the token minted on the control plane reaches the join.
  3. The same lab again: nothing changes.
  4. cni.calico_version raised to v3.32.1: the new release's files are downloaded and applied (its CRD set
     differs), nothing else on the nodes changes.
They prove the orchestration only. Readiness waiting (nodes Ready, Calico and CoreDNS pods) needs a real
cluster and is not run here; tests/deploys/test_readiness.py covers its logic.

Test setup that is not the product: the apt relay setting, an extra swap line in each machine's fstab and
the kubeadm stand-in's failure switch.
"""

from __future__ import annotations

import json
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
from tests.reference import CALICO_RELEASES, calico_manifests
from tests.system.conftest import TIMINGS, RunningLab
from tests.system.provisioning import TEST_SWAP_LINE, local_sources, on, prepare_machines

pytestmark = pytest.mark.system

FAIL_INIT_SWITCH = "/var/lib/kubeadm-standin/fail-init-after-kubeconfig"  # read by the kubeadm stand-in
OBJECTS = "/var/lib/etcd/kubelab-standin-objects"  # where the kubectl stand-in keeps the cluster's objects
FIRST_CALICO, UPGRADE_CALICO = CALICO_RELEASES
# The newest minor both releases support (Calico v3.30: 1.31-1.35, v3.32: 1.34-1.36): the upgrade's runs.
BOTH_CALICOS_KUBERNETES = "1.35.0"


@dataclass
class Runs:
    lab: Lab  # runs 1-3
    upgraded: Lab  # run 4
    repo: StandinRepo
    failed_init: NodeFailures | None = None  # run 1
    reports: list[ProvisionReport] = field(default_factory=list)  # runs 2-4
    outputs: list[list[str]] = field(default_factory=list)  # runs 1-4
    seconds: list[float] = field(default_factory=list)


@pytest.fixture(scope="module")
def runs(lxc_lab: RunningLab, tmp_path_factory) -> Runs:
    with local_sources(lxc_lab, tmp_path_factory.mktemp("served"), kubernetes_version=BOTH_CALICOS_KUBERNETES,
                       calico_version=FIRST_CALICO) as sources:
        prepare_machines(lxc_lab, sources.relay)
        result = Runs(sources.lab, sources.lab_with_calico(UPGRADE_CALICO), sources.repo)
        cp = lxc_lab.pyinfra_state().inventory.get_host(result.lab.control_plane.name)
        switch = f"mkdir -p {Path(FAIL_INIT_SWITCH).parent} && touch {FAIL_INIT_SWITCH}"
        assert cp.run_shell_command(switch, _sudo=True)[0]
        for attempt, lab in (("first", result.lab), ("second", result.lab), ("third", result.lab),
                             ("upgrade", result.upgraded)):
            lines: list[str] = []
            started = time.monotonic()
            try:
                report = run(lab, pyinfra_inventory(lxc_lab.groups()), wait_ready=False, echo=lines.append)
            except NodeFailures as err:
                assert attempt == "first", f"{attempt} run failed: {err}"
                result.failed_init = err
                assert cp.run_shell_command(f"rm {FAIL_INIT_SWITCH}", _sudo=True)[0]
            else:
                result.reports.append(report)
            result.seconds.append(time.monotonic() - started)
            TIMINGS[f"provision, {attempt} run"] = result.seconds[-1]
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

    init_line = next(line for line in runs.outputs[1] if "| kubeadm init:" in line)
    assert init_line.endswith(f": {lab.control_plane.name} changed")  # workers skip it, and say nothing
    minor = lab.kubernetes.minor
    (floor_line,) = [line for line in runs.outputs[0] if f"| containerd meets Kubernetes {minor}:" in line]
    assert floor_line.count(f"warning: containerd 1.6.20~ds1 is installed, below what Kubernetes {minor} needs") == 2
    assert "going on because containerd.allow_below_floor is true" in floor_line
    module_lines = [line for line in runs.outputs[0] if "| Kernel module " in line]
    assert module_lines and all("built into the kernel" in line for line in module_lines), module_lines


def kubectl_on(ssh, node: str, args: str) -> str:
    return on(ssh, node, f"kubectl --kubeconfig {f.ADMIN_CONF} {args}")


def test_a_partial_init_is_reset_and_the_next_run_completes_it(runs: Runs, ssh):
    """Against the STAND-IN kubeadm/kubectl (see the module docstring): run 1's init wrote admin.conf and
    failed; run 2 reset it (with what reset leaves) and ran init to the end."""
    cp = runs.lab.control_plane.name
    message = str(runs.failed_init)
    assert f"{cp}: Kubernetes cluster | Control plane | kubeadm init failed" in message, message
    assert "error execution phase wait-control-plane: could not initialize a Kubernetes cluster" in message
    assert on(ssh, cp, "cat /var/lib/kubeadm-standin/invocations").splitlines()[:3] == [
        f"init --config {f.KUBEADM_INIT_CONFIG}", "reset -f", f"init --config {f.KUBEADM_INIT_CONFIG}"]
    assert on(ssh, cp, f"test -e {f.KUBEADM_INIT_FINISHED} && echo recorded").strip() == "recorded"
    assert kubectl_on(ssh, cp, "-n kube-public get configmap/cluster-info -o name").strip() == "configmap/cluster-info"
    assert kubectl_on(ssh, cp, "-n kube-system get daemonset/kube-proxy deployment/coredns -o name").split() == [
        "daemonset.apps/kube-proxy", "deployment.apps/coredns"]
    assert on(ssh, cp, f"sha256sum < {f.ADMIN_CONF}") == on(ssh, cp, "sha256sum < ~vagrant/.kube/config")
    assert on(ssh, cp, "stat -c '%U %a' ~vagrant/.kube ~vagrant/.kube/config").split() == ["vagrant", "700",
                                                                                          "vagrant", "600"]


def test_init_completes_once_token_reaches_the_worker_join_once(runs: Runs, ssh):
    """Against the STAND-IN kubeadm/kubectl (see the module docstring)."""
    lab = runs.lab
    cp, (worker,) = lab.control_plane.name, [n.name for n in lab.workers]
    assert on(ssh, cp, "cat /var/lib/kubeadm-standin/invocations").splitlines()[2:] == [
        f"init --config {f.KUBEADM_INIT_CONFIG}", "token create --ttl 1h --print-join-command"]
    (token,) = on(ssh, cp, "cat /var/lib/kubeadm-standin/tokens").split()
    assert on(ssh, worker, "cat /var/lib/kubeadm-standin/invocations").splitlines() == [
        f"join --config {f.KUBEADM_JOIN_CONFIG}"]
    assert on(ssh, worker, "cat /var/lib/kubeadm-standin/joined-with-token").strip() == token
    assert on(ssh, worker, f"test -e {f.KUBEADM_JOIN_CONFIG} && echo left || echo removed").strip() == "removed"
    assert runs.reports[0].joined == [worker]

    init = {d["kind"]: d for d in yaml.safe_load_all(on(ssh, cp, f"cat {f.KUBEADM_INIT_CONFIG}"))}
    assert init["InitConfiguration"]["localAPIEndpoint"]["advertiseAddress"] == str(lab.control_plane.ip)

    exported = yaml.safe_load(Path(runs.reports[0].kubeconfig).read_text())
    assert exported["current-context"] == lab.name
    assert exported["clusters"][0]["cluster"]["server"] == f"https://{lab.control_plane.ip}:6443"


def test_calico_crds_then_operator_then_installation_and_each_release_once(runs: Runs, ssh):
    """Against the STAND-IN kubectl with the REAL release files: applying the Installation before its CRDs
    exist would have failed ("no matches for kind ... ensure CRDs are installed first")."""
    cp = runs.lab.control_plane.name
    kubectl = f"--kubeconfig {f.ADMIN_CONF}"
    applied = [line for line in on(ssh, cp, "cat /var/lib/kubectl-standin/invocations").splitlines()
               if " apply" in line]
    expected = []
    for lab in (runs.lab, runs.upgraded):  # run 2 applies v3.30.3, run 4 v3.32.1, runs 1 and 3 nothing
        expected += [f"{kubectl} apply --server-side --force-conflicts -f {f.calico_manifest(lab, name)}"
                     for name in f.CALICO_RELEASE_MANIFESTS]
        expected.append(f"{kubectl} apply -f {f.CALICO_INSTALLATION}")
    assert applied == expected
    installation = json.loads(on(ssh, cp, f"cat {OBJECTS}/operator.tigera.io/Installation/_cluster/default.json"))
    assert installation["spec"]["calicoNetwork"]["ipPools"][0]["cidr"] == str(runs.lab.network.pod_cidr)


def test_second_run_changes_nothing(runs: Runs, ssh):
    assert runs.reports[0].changed
    assert runs.reports[1].changes == {}, runs.reports[1].changes
    assert "no changes" in runs.outputs[2]
    assert runs.reports[1].joined == []
    cp, worker = runs.lab.control_plane.name, runs.lab.workers[0].name
    assert len(on(ssh, cp, "cat /var/lib/kubeadm-standin/invocations").splitlines()) == 4
    assert len(on(ssh, worker, "cat /var/lib/kubeadm-standin/invocations").splitlines()) == 1
    for number, output in enumerate(runs.outputs, start=1):
        print("\n".join([f"run {number}:", *output]))
    print("provision: " + ", ".join(f"run {n} {s:.1f} s" for n, s in enumerate(runs.seconds, start=1)))


def test_raising_calico_version_applies_the_new_release(runs: Runs, ssh):
    """Run 4 pins v3.32.1 instead of v3.30.3: its CRDs (istios and clusternetworkpolicies are new) and its
    operator are applied; nothing else on the nodes changes."""
    cp, worker = runs.upgraded.control_plane.name, runs.upgraded.workers[0].name
    version = runs.upgraded.cni.calico_version
    assert [step.rsplit(" | ", 1)[-1] for step in runs.reports[2].changes[cp]] == [
        f"Calico {version} folder", *(f"Calico {version} {name}" for name in f.CALICO_RELEASE_MANIFESTS),
        *(f"Apply Calico {version} {name}" for name in f.CALICO_RELEASE_MANIFESTS),
        "Apply the Calico Installation"]  # the rendered Installation names its release in a comment
    assert worker not in runs.reports[2].changes
    for crd in ("istios.operator.tigera.io", "clusternetworkpolicies.policy.networking.k8s.io"):
        assert kubectl_on(ssh, cp, f"get crd/{crd} -o name").strip() == \
            f"customresourcedefinition.apiextensions.k8s.io/{crd}"
    operator = json.loads(on(ssh, cp, f"cat {OBJECTS}/apps/Deployment/tigera-operator/tigera-operator.json"))
    released = next(d for d in yaml.safe_load_all((calico_manifests(version) / "tigera-operator.yaml").read_text())
                    if d and d["kind"] == "Deployment")
    assert operator["spec"]["template"]["spec"]["containers"][0]["image"] == \
        released["spec"]["template"]["spec"]["containers"][0]["image"]
    for name in f.CALICO_RELEASE_MANIFESTS:
        path = f.calico_manifest(runs.upgraded, name)
        assert on(ssh, cp, f"cat {f.applied_record(path)}").strip() == on(ssh, cp, f"sha256sum {path}").split()[0]


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
