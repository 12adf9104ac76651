"""The operations each deploy plans against recorded facts (pyinfra's own testing style), including the
idempotent second run: a node whose facts say "done" gets no commands at all."""

from __future__ import annotations

import hashlib
import tomllib

import pytest
import yaml
from pyinfra.api import OperationError

from deploys import files as f
from deploys.facts import InitState
from deploys.operations import waiting_for_apt_locks
from tests.deploys.labs import make_lab
from tests.deploys.planning import changes, plan
from tests.deploys.recorded_facts import cluster_facts, fresh_node, release_digest

CP, W1 = "k8s-control-plane", "k8s-worker-01"


def step(name: str) -> str:
    return name.rsplit(" | ", 1)[-1]


def commands_of(ops, wanted: str) -> list:
    (op,) = [op for op in ops if step(op.name) == wanted]
    return op.commands


def uploads(ops) -> dict[str, str]:
    return {c[1]: c[2] for op in ops for c in op.commands if isinstance(c, tuple) and c[0] == "upload"}


def test_fresh_cluster_plan_runs_every_step_in_order():
    lab = make_lab()
    planned = plan(lab, cluster_facts(lab))
    cp_steps = [step(n) for n in changes(planned)[CP]]
    assert cp_steps == [
        "Install prerequisites and containerd", "Kernel modules at boot", "Kernel module br_netfilter",
        "Bridge and forwarding sysctls at boot", "sysctl net.bridge.bridge-nf-call-iptables",
        "sysctl net.bridge.bridge-nf-call-ip6tables", "sysctl net.ipv4.ip_forward", "Swap off now",
        "Swap off after reboot", "containerd config: SystemdCgroup, CRI, sandbox image", "crictl endpoint",
        "containerd running and enabled", "Kubernetes 1.36 repository key", "Kubernetes 1.36 repository",
        "Install kubelet, kubeadm, kubectl 1.36.4-1.1", "Hold kubelet, kubeadm, kubectl", "kubelet node IP",
        "kubelet enabled", "kubeadm config (v1beta4)", "kubeadm init", "kubeconfig for vagrant",
        "Calico v3.32.1 folder", "Calico v3.32.1 operator-crds.yaml", "Calico v3.32.1 tigera-operator.yaml",
        "Apply Calico v3.32.1 operator-crds.yaml", "Apply Calico v3.32.1 tigera-operator.yaml",
        "Apply the Calico Installation", "Mint a join token",
    ]
    worker_steps = [step(n) for n in changes(planned)[W1]]
    assert worker_steps == cp_steps[:18] + ["kubeadm join"]


def test_hosts_stay_in_step_so_init_and_token_come_before_any_join():
    """pyinfra runs operation i on every host before i+1; the plans must line up position by position."""
    lab = make_lab(workers=3)
    planned = plan(lab, cluster_facts(lab))
    names = [[op.name for op in ops] for ops in planned.values()]
    assert all(n == names[0] for n in names)
    order = [step(n) for n in names[0]]
    assert order.index("kubeadm init") < order.index("Mint a join token") < order.index("kubeadm join")


def test_commands_for_the_key_steps():
    lab = make_lab()
    planned = plan(lab, cluster_facts(lab))
    cp = planned[CP]
    install = commands_of(cp, "Install prerequisites and containerd")
    assert install[0] == waiting_for_apt_locks("apt-get update")
    assert install[1].endswith("install -o DPkg::Lock::Timeout=600 containerd")  # curl etc. present
    kube = commands_of(cp, "Install kubelet, kubeadm, kubectl 1.36.4-1.1")
    assert kube[1].endswith("install -o DPkg::Lock::Timeout=600 --allow-change-held-packages kubelet=1.36.4-1.1 "
                            "kubeadm=1.36.4-1.1 kubectl=1.36.4-1.1")
    (hold,) = commands_of(cp, "Hold kubelet, kubeadm, kubectl")
    assert hold == waiting_for_apt_locks("apt-mark hold kubelet kubeadm kubectl")
    assert commands_of(cp, "kubeadm init") == [
        f"touch {f.KUBEADM_INIT_STARTED}", f"kubeadm init --config {f.KUBEADM_INIT_CONFIG}",
        f"touch {f.KUBEADM_INIT_FINISHED}"]
    assert commands_of(cp, "Kernel module br_netfilter") == ["modprobe br_netfilter"]
    assert commands_of(cp, "Kernel module overlay") == []  # already loaded on the box
    assert commands_of(cp, "Swap off now") == ["swapoff -a"]
    key = commands_of(cp, "Kubernetes 1.36 repository key")
    assert "curl -sSLf https://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key" in key[0]
    assert key[1].endswith(f" {f.KEYRING}")
    assert commands_of(cp, "containerd config: SystemdCgroup, CRI, sandbox image")[-1] == \
        "systemctl restart containerd"
    crds, operator = (f.calico_manifest(lab, name) for name in ("operator-crds.yaml", "tigera-operator.yaml"))
    assert f.CALICO_RELEASE_MANIFESTS == ("operator-crds.yaml", "tigera-operator.yaml")  # CRDs first
    assert commands_of(cp, "Apply Calico v3.32.1 operator-crds.yaml") == [
        f"kubectl --kubeconfig {f.ADMIN_CONF} apply --server-side --force-conflicts -f {crds}",
        f"echo {release_digest(lab, 'operator-crds.yaml')} > {crds}.applied-sha256"]
    assert commands_of(cp, "Apply Calico v3.32.1 tigera-operator.yaml")[0] == \
        f"kubectl --kubeconfig {f.ADMIN_CONF} apply --server-side --force-conflicts -f {operator}"
    download = commands_of(cp, "Calico v3.32.1 operator-crds.yaml")
    assert any("https://raw.githubusercontent.com/projectcalico/calico/v3.32.1/manifests/operator-crds.yaml" in c
               for c in download if isinstance(c, str))
    assert commands_of(cp, "Mint a join token") == [("call", "mint_join_token")]
    assert commands_of(planned[W1], "kubeadm join") == [("call", "join_node")]
    assert commands_of(planned[W1], "kubeadm init") == []
    assert commands_of(cp, "kubeadm join") == []


def test_uploaded_files_are_the_rendered_ones():
    lab = make_lab()
    planned = plan(lab, cluster_facts(lab))
    cp_files, worker_files = uploads(planned[CP]), uploads(planned[W1])
    assert cp_files[f.KUBEADM_INIT_CONFIG] == f.kubeadm_init_config(lab)
    assert cp_files[f.CALICO_INSTALLATION] == f.calico_installation(lab)
    assert worker_files[f.KUBELET_DEFAULTS] == f.kubelet_defaults(lab.workers[0])
    assert "SystemdCgroup = true" in worker_files[f.CONTAINERD_CONFIG]
    assert worker_files["/etc/fstab"].splitlines()[-1] == "#/swap.img\tnone\tswap\tsw\t0\t0"
    assert f.KUBEADM_INIT_CONFIG not in worker_files


@pytest.mark.parametrize("workers", [1, 3])
def test_second_run_on_a_finished_cluster_changes_nothing(workers):
    lab = make_lab(workers=workers)
    planned = plan(lab, cluster_facts(lab, finished={n.name for n in lab.nodes}))
    assert changes(planned) == {n.name: [] for n in lab.nodes}
    assert not any(op.conditional for ops in planned.values() for op in ops
                   if step(op.name) != "Restart kubelet for its new node IP")


def test_a_worker_added_to_the_lab_joins_on_the_next_run():
    lab = make_lab(workers=2)
    planned = plan(lab, cluster_facts(lab, finished={CP, W1}))
    result = changes(planned)
    assert [step(n) for n in result[CP]] == ["Mint a join token"]
    assert result[W1] == []
    assert step(result["k8s-worker-02"][-1]) == "kubeadm join"


def test_pinned_containerd_version_is_installed_exactly():
    lab = make_lab(containerd={"version": "2.2.1-0ubuntu1~24.04.1"})
    planned = plan(lab, cluster_facts(lab))
    assert commands_of(planned[W1], "Install prerequisites and containerd")[1].endswith(
        "install -o DPkg::Lock::Timeout=600 'containerd=2.2.1-0ubuntu1~24.04.1'")  # quoted for the shell: ~
    done = plan(lab, cluster_facts(lab, finished={CP, W1}))  # the recorded finished node has that version
    assert changes(done) == {CP: [], W1: []}


def test_kernel_module_built_in_is_not_loaded():
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[W1]["KernelModuleState"] = {"overlay": "builtin", "br_netfilter": "builtin"}
    planned = plan(lab, facts)
    assert commands_of(planned[W1], "Kernel module br_netfilter") == []
    assert commands_of(planned[W1], "Kernel module overlay") == []


def test_kernel_module_missing_in_a_container_says_so():
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[W1] = {**fresh_node(lab, lab.workers[0]), "ContainerKind": "lxc"}
    with pytest.raises(OperationError, match=r"k8s-worker-01: kernel module br_netfilter .* lxc container, "
                                             r"which cannot load modules: run `modprobe br_netfilter` on the"):
        plan(lab, facts)


def test_the_installation_waits_for_its_crds_to_exist_and_be_established_then_records_what_it_applied():
    lab = make_lab()
    cp = plan(lab, cluster_facts(lab))[CP]
    kubectl = f"kubectl --kubeconfig {f.ADMIN_CONF}"
    crds = "crd/installations.operator.tigera.io crd/apiservers.operator.tigera.io"
    installation = f.calico_installation(lab)
    commands = commands_of(cp, "Apply the Calico Installation")
    assert ("upload", f.CALICO_INSTALLATION, installation) in commands
    assert commands[-4:] == [
        f"for attempt in $(seq 30); do {kubectl} get {crds} >/dev/null 2>&1 && break; sleep 2; done",
        f"{kubectl} wait --for condition=established --timeout 120s {crds}",
        f"{kubectl} apply -f {f.CALICO_INSTALLATION}",
        f"echo {hashlib.sha256(installation.encode()).hexdigest()} > {f.CALICO_INSTALLATION}.applied-sha256",
    ]


def test_raising_calico_version_applies_the_new_release_and_nothing_else():
    """v3.30.3 applied and recorded; the lab now pins v3.32.1: its files go to a folder of their own and
    are applied (the objects they name mostly exist already: existence alone would skip them)."""
    kubernetes = {"version": "1.35.0"}  # the newest minor both releases support
    old = make_lab(kubernetes=kubernetes, cni={"calico_version": "v3.30.3"})
    new = make_lab(kubernetes=kubernetes, cni={"calico_version": "v3.32.1"})
    facts = cluster_facts(old, finished={n.name for n in old.nodes})
    cp = facts[CP]
    new_files = [f.calico_manifest(new, name) for name in f.CALICO_RELEASE_MANIFESTS]
    cp["File"] = {**cp["File"], **{p: None for p in new_files}}
    cp["Directory"] = {**cp["Directory"], f.calico_release_dir(new): None}
    cp["Sha256File"] = {**cp["Sha256File"], **{f.calico_manifest(new, n): release_digest(new, n)
                                               for n in f.CALICO_RELEASE_MANIFESTS}}
    cp["FileContents"] = {**cp["FileContents"], **{f.applied_record(p): None for p in new_files}}
    cp["KubeObjectsPresent"] = {**cp["KubeObjectsPresent"], **{p: True for p in new_files}}
    planned = plan(new, facts)
    assert [step(n) for n in changes(planned)[CP]] == [
        "Calico v3.32.1 folder", "Calico v3.32.1 operator-crds.yaml", "Calico v3.32.1 tigera-operator.yaml",
        "Apply Calico v3.32.1 operator-crds.yaml", "Apply Calico v3.32.1 tigera-operator.yaml",
        "Apply the Calico Installation"]  # the rendered Installation names its release in a comment
    assert changes(planned)[W1] == []

    # The same v3.32.1 files once applied and recorded: nothing to do.
    cp["File"] = {**cp["File"], **{p: {"mode": 600} for p in new_files}}
    cp["Directory"][f.calico_release_dir(new)] = {"mode": 700}
    cp["Sha1File"][f.CALICO_INSTALLATION] = hashlib.sha1(f.calico_installation(new).encode()).hexdigest()
    cp["FileContents"] = {**cp["FileContents"], **{f.applied_record(p): [release_digest(new, n)]
                                                   for p, n in zip(new_files, f.CALICO_RELEASE_MANIFESTS)},
                          f.applied_record(f.CALICO_INSTALLATION):
                              [hashlib.sha256(f.calico_installation(new).encode()).hexdigest()]}
    assert changes(plan(new, facts))[CP] == []


def test_a_changed_download_is_applied_again_and_a_missing_object_too():
    lab = make_lab()
    operator = f.calico_manifest(lab, "tigera-operator.yaml")
    facts = cluster_facts(lab, finished={CP, W1})
    facts[CP]["Sha256File"] = {**facts[CP]["Sha256File"], operator: "0" * 64}  # not what was applied
    assert [step(n) for n in changes(plan(lab, facts))[CP]] == ["Apply Calico v3.32.1 tigera-operator.yaml"]
    facts = cluster_facts(lab, finished={CP, W1})
    facts[CP]["KubeObjectsPresent"] = {**facts[CP]["KubeObjectsPresent"], f.CALICO_INSTALLATION: False}
    assert [step(n) for n in changes(plan(lab, facts))[CP]] == ["Apply the Calico Installation"]


def test_a_finished_init_is_never_run_or_reset_again():
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[CP]["KubeadmInitState"] = InitState("finished")
    assert commands_of(plan(lab, facts)[CP], "kubeadm init") == []


def test_a_partial_init_is_reset_with_what_reset_leaves_then_run_again():
    """kubeadm wrote admin.conf and failed later: the next `up` resets and inits; nothing else differs."""
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[CP]["KubeadmInitState"] = InitState("partial")
    assert commands_of(plan(lab, facts)[CP], "kubeadm init") == [
        "kubeadm reset -f", "rm -rf /etc/cni/net.d",
        ("if command -v iptables >/dev/null; then "
        "iptables -F && iptables -t nat -F && iptables -t mangle -F && iptables -X; fi"),
        f"touch {f.KUBEADM_INIT_STARTED}", f"kubeadm init --config {f.KUBEADM_INIT_CONFIG}",
        f"touch {f.KUBEADM_INIT_FINISHED}"]


def test_an_init_finished_before_kubelab_recorded_it_is_recorded_not_reset():
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[CP]["KubeadmInitState"] = InitState("finished-unrecorded")
    assert commands_of(plan(lab, facts)[CP], "kubeadm init") == [f"touch {f.KUBEADM_INIT_FINISHED}"]


def test_admin_conf_without_record_and_an_unreachable_api_server_is_refused_not_reset():
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[CP]["KubeadmInitState"] = InitState(
        "unknown", "The connection to the server 192.168.56.10:6443 was refused")
    with pytest.raises(OperationError, match=r"k8s-control-plane: /etc/kubernetes/admin.conf exists but .* "
                                             r"\(kubectl: The connection to the server .* was refused\)\. .*"
                                             r"run `sudo kubeadm reset -f` there first"):
        plan(lab, facts)


def test_prepare_only_stops_before_kubeadm_init():
    """`up --prepare-only` (machines worth a snapshot): node prep on every node, no init, no Calico, no join."""
    lab = make_lab()
    full = changes(plan(lab, cluster_facts(lab)))
    prepared = changes(plan(lab, cluster_facts(lab), prepare_only=True))
    cp_steps = [step(n) for n in prepared[CP]]
    assert cp_steps == [step(n) for n in full[CP]][:18]
    assert cp_steps[-1] == "kubelet enabled"
    assert [step(n) for n in prepared[W1]] == cp_steps


def test_installed_containerd_below_the_floor_is_refused_naming_both_versions_and_the_fix():
    """Ubuntu 24.04's release pocket has containerd 1.7.12; Kubernetes 1.36 needs 2.2.0+ (RELEASES.md)."""
    lab = make_lab()
    facts = cluster_facts(lab)
    facts[W1]["ContainerdVersion"] = "1.7.12"
    with pytest.raises(OperationError) as err:
        plan(lab, facts)
    assert str(err.value).startswith(
        "k8s-worker-01: containerd 1.7.12 is installed, below what Kubernetes 1.36 needs (2.3.0+ or 2.2.0+, "
        "containerd's RELEASES.md). Fix: set containerd.version in the lab definition")
    assert "noble-updates" in str(err.value)


def test_allow_below_floor_lets_an_old_containerd_through():
    lab = make_lab(containerd={"allow_below_floor": True})
    facts = cluster_facts(lab)
    facts[W1]["ContainerdVersion"] = "1.6.20~ds1"
    assert "kubeadm join" in [step(n) for n in changes(plan(lab, facts))[W1]]


def test_containerd_gets_the_pause_image_the_pinned_kubeadm_expects():
    lab = make_lab()
    config = tomllib.loads(uploads(plan(lab, cluster_facts(lab))[W1])[f.CONTAINERD_CONFIG])
    assert config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"] == {
        "sandbox": "registry.k8s.io/pause:3.10.2"}


def test_crictl_talks_to_containerd():
    lab = make_lab()
    crictl = yaml.safe_load(uploads(plan(lab, cluster_facts(lab))[W1])[f.CRICTL_CONFIG])
    assert crictl == {"runtime-endpoint": "unix:///run/containerd/containerd.sock",
                      "image-endpoint": "unix:///run/containerd/containerd.sock", "timeout": 10}


def test_kube_directory_belongs_to_the_login_user():
    lab = make_lab()
    assert commands_of(plan(lab, cluster_facts(lab))[CP], "kubeconfig for vagrant") == [
        "install -d -m 700 -o vagrant -g $(id -gn vagrant) /home/vagrant/.kube",
        f"install -m 600 -o vagrant -g $(id -gn vagrant) {f.ADMIN_CONF} /home/vagrant/.kube/config"]
    facts = cluster_facts(lab, finished={CP, W1})  # a node an older kubelab left with a root-owned ~/.kube
    facts[CP]["Directory"] = {**facts[CP]["Directory"], "/home/vagrant/.kube": {"user": "root", "mode": 755}}
    assert commands_of(plan(lab, facts)[CP], "kubeconfig for vagrant") == [
        "install -d -m 700 -o vagrant -g $(id -gn vagrant) /home/vagrant/.kube"]
