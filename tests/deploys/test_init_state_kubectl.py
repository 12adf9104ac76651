"""KubeadmInitState's shell command run with real kubectl, so its reading of kubectl's answers is kubectl's.

The fact decides whether an existing admin.conf belongs to a finished `kubeadm init` (a re-run must leave
it alone) or a partial one (reset and init again) from kubectl's exit status and output when it asks for the
objects init's last phases create. The provisioning suites answer with the kubectl stand-in, whose messages
were written from kubectl's source; here real kubectl of the lab's minor (tests/debian_testing.py) answers,
against the API test server holding those objects or not, and against a port where nothing listens.
Stands in: the API test server for kube-apiserver (its 404 is a Status with reason NotFound, as the real one
sends); temp paths for /etc/kubernetes/admin.conf and the fact's records.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deploys import facts
from deploys.facts import INIT_LAST_OBJECTS, InitState, KubeadmInitState
from tests.debian_testing import debian_testing_kubectl
from tests.kubeapi.kubeconfig import write_kubeconfig

pytestmark = pytest.mark.api


@pytest.fixture
def paths(tmp_path, monkeypatch) -> Path:
    """The fact's paths under tmp_path; returns admin.conf's."""
    monkeypatch.setattr(facts, "ADMIN_CONF", str(tmp_path / "admin.conf"))
    monkeypatch.setattr(facts, "KUBEADM_INIT_STARTED", str(tmp_path / "kubeadm-init.started"))
    monkeypatch.setattr(facts, "KUBEADM_INIT_FINISHED", str(tmp_path / "kubeadm-init.finished"))
    return tmp_path / "admin.conf"


def init_state() -> InitState:
    """The fact as pyinfra gathers it: its command in a shell (kubectl on PATH), its output lines processed."""
    kubectl_dir = os.path.dirname(debian_testing_kubectl())
    done = subprocess.run(["sh", "-c", KubeadmInitState().command()], capture_output=True, text=True,
                          env={"PATH": f"{kubectl_dir}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")},
                          timeout=60, check=True)
    return KubeadmInitState().process(done.stdout.splitlines())


def add_init_objects(kube_api, *which: str) -> None:
    made = {
        "cluster-info": ("configmaps", {"metadata": {"name": "cluster-info", "namespace": "kube-public"}}),
        "kube-proxy": ("daemonsets", {"metadata": {"name": "kube-proxy", "namespace": "kube-system"}}),
        "coredns": ("deployments", {"metadata": {"name": "coredns", "namespace": "kube-system"}}),
    }
    for name in which:
        kube_api.create_object(*made[name], validate=False)


def test_admin_conf_without_inits_last_objects_is_a_partial_init(kube_api, paths) -> None:
    kube_api.write_kubeconfig(paths)
    add_init_objects(kube_api, "cluster-info", "kube-proxy")  # the addon phase stopped before CoreDNS
    state = init_state()
    assert state.status == "partial", state
    assert 'deployments.apps "coredns" not found' in state.detail


def test_admin_conf_with_inits_last_objects_is_a_finished_init(kube_api, paths) -> None:
    kube_api.write_kubeconfig(paths)
    add_init_objects(kube_api, "cluster-info", "kube-proxy", "coredns")
    assert init_state() == InitState("finished-unrecorded")


def test_an_unreachable_api_server_is_unknown_not_partial(kube_api, paths) -> None:
    """Never reset a cluster because its API server is down for a moment."""
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kube_api.write_kubeconfig(paths)
    paths.write_text(paths.read_text().replace(f":{kube_api.port}", f":{port}"))
    state = init_state()
    assert state.status == "unknown", state
    assert f"127.0.0.1:{port} was refused" in state.detail


def test_the_records_decide_before_kubectl_is_asked(paths) -> None:
    assert init_state() == InitState("absent")
    paths.write_text("not read")
    Path(facts.KUBEADM_INIT_STARTED).touch()
    assert init_state() == InitState("partial")
    Path(facts.KUBEADM_INIT_FINISHED).touch()
    assert init_state() == InitState("finished")


# -- the kubectl stand-in answers these as real kubectl does ----------------------------------------------

STANDIN = Path(__file__).parent / "standin" / "kubectl"


def standin_kubectl(root: Path, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    """The provisioning suites' kubectl stand-in, its object store under ``root``."""
    return subprocess.run([sys.executable, str(STANDIN), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "STANDIN_ROOT": str(root)})


def real_kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([debian_testing_kubectl(), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def answer(done: subprocess.CompletedProcess) -> tuple[int, str, str]:
    """Exit status, stdout, and stderr's last line (kubectl logs the failed discovery above it)."""
    return done.returncode, done.stdout, (done.stderr.strip().splitlines() or [""])[-1]


@pytest.mark.parametrize("args", [shlex.split(args) + ["-o", "name"] for args in INIT_LAST_OBJECTS],
                         ids=["cluster-info", "kube-proxy and coredns"])
def test_the_standin_answers_inits_objects_as_kubectl_does(kube_api, tmp_path, args) -> None:
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    root = tmp_path / "standin"
    (root / "var/lib/etcd/kubelab-standin-objects").mkdir(parents=True)  # what the kubeadm stand-in's init makes
    manifest = tmp_path / "objects.yaml"
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n---\n"
                        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: kube-proxy, namespace: kube-system}\n")
    assert standin_kubectl(root, kubeconfig, "apply", "-f", str(manifest)).returncode == 0
    add_init_objects(kube_api, "kube-proxy")
    real, standin = real_kubectl(kubeconfig, *args), standin_kubectl(root, kubeconfig, *args)
    assert real.returncode == 1  # something is missing in both
    assert answer(standin) == answer(real)


def test_the_standin_is_refused_as_kubectl_is(tmp_path) -> None:
    """Before init (no object store) the stand-in answers as kubectl does when nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # a token, as admin.conf has credentials (client certificates): kubectl would prompt without any
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}", token="t")
    args = ("-n", "kube-system", "get", "deployment/coredns", "-o", "name")
    real, standin = real_kubectl(kubeconfig, *args), standin_kubectl(tmp_path / "standin", kubeconfig, *args)
    assert real.returncode == 1
    assert answer(standin) == answer(real)
