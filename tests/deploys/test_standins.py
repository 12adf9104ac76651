"""The kubeadm and kubectl stand-ins (tests/deploys/standin/) answer only from what they were given, the
way the real tools answer: checked here with the REAL Calico release files from ../shared/reference/ and
the manifests the deploys render. Both scripts run on this host with their state under a temporary root
(STANDIN_ROOT), exactly as the system suite's machines run them from the stand-in packages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploys import files as f
from tests.deploys.labs import make_lab
from tests.deploys.standin_repo import STANDIN_DIR
from tests.reference import calico_manifests

INSTALLATION_CRD = "crd/installations.operator.tigera.io"
NO_API_SERVER = "The connection to the server 192.168.56.10:6443 was refused - did you specify the right host or port?"


class Node:
    """One machine's worth of stand-in state under `root`."""

    def __init__(self, root: Path):
        self.root = root
        self.admin_conf = root / "etc/kubernetes/admin.conf"
        self.fail_switch = root / "var/lib/kubeadm-standin/fail-init-after-kubeconfig"
        self.init_config = root / "kubeadm-init.yaml"
        self.init_config.write_text(f.kubeadm_init_config(make_lab()))

    def _run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        env = {"STANDIN_ROOT": str(self.root), "PATH": os.environ["PATH"]}
        return subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=60)

    def kubeadm(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self._run(["bash", str(STANDIN_DIR / "kubeadm"), *args])

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self._run([sys.executable, str(STANDIN_DIR / "kubectl"), "--kubeconfig", str(self.admin_conf), *args])

    def init(self) -> subprocess.CompletedProcess[str]:
        return self.kubeadm("init", "--config", str(self.init_config))


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


@pytest.fixture
def cluster(node: Node) -> Node:
    assert node.init().returncode == 0
    return node


def installation(node: Node) -> Path:
    path = node.root / "calico-installation.yaml"
    path.write_text(f.calico_installation(make_lab()))
    return path


def test_before_init_there_is_no_api_server_to_answer(node: Node):
    assert node.kubeadm("init", "--config", "/nonexistent").returncode == 2
    node.init_config.write_text(f.kubeadm_init_config(make_lab()))
    node.admin_conf.parent.mkdir(parents=True)
    node.admin_conf.write_text("clusters:\n- cluster:\n    server: https://192.168.56.10:6443\n")
    got = node.kubectl("get", INSTALLATION_CRD)
    assert got.returncode == 1 and got.stderr.strip() == NO_API_SERVER


@pytest.mark.parametrize("version", ["v3.30.3", "v3.32.1"])
def test_the_operator_manifest_alone_gives_no_installation_crd(cluster: Node, version: str):
    """What the deploy did before: the operator manifest, then wait for a CRD that manifest never held."""
    operator = calico_manifests(version) / "tigera-operator.yaml"
    applied = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(operator))
    assert applied.returncode == 0, applied.stderr
    assert "namespace/tigera-operator serverside-applied" in applied.stdout.splitlines()
    assert "deployment.apps/tigera-operator serverside-applied" in applied.stdout.splitlines()
    assert not any(line.startswith("customresourcedefinition") for line in applied.stdout.splitlines())

    waited = cluster.kubectl("wait", "--for", "condition=established", "--timeout", "120s", INSTALLATION_CRD)
    assert waited.returncode == 1
    assert waited.stderr.strip() == ('Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io '
                                     '"installations.operator.tigera.io" not found')
    rendered = installation(cluster)
    refused = cluster.kubectl("apply", "-f", str(rendered))
    assert refused.returncode == 1
    assert (f'error: resource mapping not found for name: "default" namespace: "" from "{rendered}": no matches '
            'for kind "Installation" in version "operator.tigera.io/v1"\nensure CRDs are installed first') \
        in refused.stderr
    got = cluster.kubectl("get", "-f", str(rendered), "-o", "name")
    assert got.returncode == 1 and "ensure CRDs are installed first" in got.stderr


@pytest.mark.parametrize("version", ["v3.30.3", "v3.32.1"])
def test_crds_then_operator_then_the_installation(cluster: Node, version: str):
    release = calico_manifests(version)
    for name in f.CALICO_RELEASE_MANIFESTS:
        applied = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(release / name))
        assert applied.returncode == 0, applied.stderr
    waited = cluster.kubectl("wait", "--for", "condition=established", "--timeout", "120s",
                             *(f"crd/{name}" for name in f.CALICO_INSTALLATION_CRDS))
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.splitlines() == [
        f"customresourcedefinition.apiextensions.k8s.io/{name} condition met" for name in f.CALICO_INSTALLATION_CRDS]

    rendered = installation(cluster)
    applied = cluster.kubectl("apply", "-f", str(rendered))
    assert applied.stdout.splitlines() == ["installation.operator.tigera.io/default created",
                                           "apiserver.operator.tigera.io/default created"], applied.stderr
    assert cluster.kubectl("apply", "-f", str(rendered)).stdout.splitlines() == [
        "installation.operator.tigera.io/default unchanged", "apiserver.operator.tigera.io/default unchanged"]
    got = cluster.kubectl("get", "-f", str(rendered), "-o", "name")
    assert got.stdout.splitlines() == ["installation.operator.tigera.io/default", "apiserver.operator.tigera.io/default"]


def test_an_upgrade_brings_the_new_releases_crds(cluster: Node):
    old, new = (calico_manifests(v) / "operator-crds.yaml" for v in ("v3.30.3", "v3.32.1"))
    assert cluster.kubectl("apply", "--server-side", "-f", str(old)).returncode == 0
    missing = cluster.kubectl("get", "-f", str(new), "-o", "name")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        ('Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "istios.operator.tigera.io" '
        "not found"),
        ('Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io '
        '"clusternetworkpolicies.policy.networking.k8s.io" not found')]
    assert cluster.kubectl("apply", "--server-side", "-f", str(new)).returncode == 0
    assert cluster.kubectl("get", "-f", str(new), "-o", "name").returncode == 0


def test_init_creates_the_objects_its_last_phases_create(cluster: Node):
    got = cluster.kubectl("-n", "kube-system", "get", "daemonset/kube-proxy", "deployment/coredns", "-o", "name")
    assert got.stdout.splitlines() == ["daemonset.apps/kube-proxy", "deployment.apps/coredns"], got.stderr
    assert cluster.kubectl("-n", "kube-public", "get", "configmap/cluster-info", "-o", "name").stdout.strip() == \
        "configmap/cluster-info"
    absent = cluster.kubectl("-n", "kube-system", "get", "configmap/cluster-info")
    assert absent.returncode == 1
    assert absent.stderr.strip() == 'Error from server (NotFound): configmaps "cluster-info" not found'


def test_a_failed_init_leaves_admin_conf_and_needs_a_reset(node: Node):
    node.fail_switch.parent.mkdir(parents=True)
    node.fail_switch.touch()
    failed = node.init()
    assert failed.returncode == 1
    assert failed.stderr.splitlines() == [
        "error execution phase wait-control-plane: could not initialize a Kubernetes cluster",
        "To see the stack trace of this error execute with --v=5 or higher"]
    assert node.admin_conf.exists()
    assert node.kubectl("get", "-n", "kube-public", "configmap/cluster-info").stderr.strip() == NO_API_SERVER

    node.fail_switch.unlink()
    again = node.init()
    assert again.returncode == 1
    assert again.stderr.splitlines()[:3] == [
        "error execution phase preflight: [preflight] Some fatal errors occurred:",
        ("\t[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: "
        "/etc/kubernetes/manifests/kube-apiserver.yaml already exists"),
        ("\t[ERROR FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml]: "
        "/etc/kubernetes/manifests/kube-controller-manager.yaml already exists")]
    assert "\t[ERROR DirAvailable--var-lib-etcd]: /var/lib/etcd is not empty" in again.stderr.splitlines()

    reset = node.kubeadm("reset", "-f")
    assert reset.returncode == 0
    assert "The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d" \
        in reset.stdout.splitlines()
    assert "The reset process does not reset or clean up iptables rules or IPVS tables." in reset.stdout.splitlines()
    assert not node.admin_conf.exists() and not list((node.root / "etc/kubernetes/manifests").iterdir())
    assert node.init().returncode == 0
    assert node.kubectl("-n", "kube-public", "get", "configmap/cluster-info").returncode == 0


def test_reset_removes_the_clusters_objects(cluster: Node):
    crds = calico_manifests("v3.32.1") / "operator-crds.yaml"
    assert cluster.kubectl("apply", "--server-side", "-f", str(crds)).returncode == 0
    assert cluster.kubeadm("reset", "-f").returncode == 0
    assert cluster.init().returncode == 0
    gone = cluster.kubectl("get", INSTALLATION_CRD)
    assert gone.returncode == 1 and "(NotFound)" in gone.stderr
