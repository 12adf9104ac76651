"""The provisioning suites' kubectl stand-in (tests/deploys/standin/kubectl) answers as real kubectl does.

The deploys decide from kubectl's exit status and output: whether init finished (init's last objects present
or NotFound), whether a manifest's objects exist (`get -f`), whether the CRDs a Calico resource needs exist and
are Established (a bounded `get` poll, then `wait`). The stand-in answers those from the objects it was given;
here each request goes to the stand-in and to real kubectl 1.36.4 (tests/debian_testing.py) in the same
situation, and the answers (exit status, stdout, stderr's last line) must be equal.
Stands in on the real side: the API test server for kube-apiserver (objects written directly; no
apiextensions controller, so a test writes the Established condition it would write), a closed port for an
API server that is down.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from deploys.facts import INIT_LAST_OBJECTS
from kubeapi_testserver.kubeconfig import write_kubeconfig
from tests.debian_testing import closed_port, debian_testing_kubectl

pytestmark = pytest.mark.api

STANDIN = Path(__file__).parent / "standin" / "kubectl"
CRDS = ("installations.operator.tigera.io", "apiservers.operator.tigera.io")


class Both:
    """The stand-in (its object store under ``root``) and real kubectl against ``kube_api``, one kubeconfig."""

    def __init__(self, kube_api, tmp_path: Path) -> None:
        self.kube_api = kube_api
        self.kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
        self.root = tmp_path / "standin"
        (self.root / "var/lib/etcd/kubelab-standin-objects").mkdir(parents=True)  # as the kubeadm stand-in's init
        self.tmp_path = tmp_path

    def add(self, storage: str | None, obj: dict) -> None:
        """One object in both clusters: applied through the stand-in, written into the API test server
        (``storage`` None: the server has it already)."""
        manifest = self.tmp_path / "one.yaml"
        manifest.write_text(json.dumps(obj))  # JSON is YAML
        applied = standin_kubectl(self.root, self.kubeconfig, "apply", "-f", str(manifest))
        assert applied.returncode == 0, applied.stderr
        if storage is not None:
            self.kube_api.create_object(storage, obj, validate=False)

    def answers(self, *args: str) -> tuple[tuple, tuple]:
        return (answer(standin_kubectl(self.root, self.kubeconfig, *args)),
                answer(real_kubectl(self.kubeconfig, *args)))


def standin_kubectl(root: Path, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(STANDIN), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "STANDIN_ROOT": str(root)})


def real_kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([debian_testing_kubectl(), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def answer(done: subprocess.CompletedProcess) -> tuple[int, str, str]:
    """Exit status, stdout, and stderr's last line (kubectl logs failed discovery above it)."""
    return done.returncode, done.stdout, (done.stderr.strip().splitlines() or [""])[-1]


def crd(name: str) -> dict:
    plural, group = name.split(".", 1)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].capitalize()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


@pytest.fixture
def both(kube_api, tmp_path) -> Both:
    both = Both(kube_api, tmp_path)
    both.add(None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    return both


@pytest.mark.parametrize("args", [shlex.split(args) + ["-o", "name"] for args in INIT_LAST_OBJECTS],
                         ids=["cluster-info", "kube-proxy and coredns"])
def test_inits_last_objects_when_some_are_missing(both, args) -> None:
    both.add("daemonsets", {"apiVersion": "apps/v1", "kind": "DaemonSet",
                            "metadata": {"name": "kube-proxy", "namespace": "kube-system"}})
    standin, real = both.answers(*args)
    assert real[0] == 1  # something is missing in both
    assert standin == real


def test_the_crd_poll_and_wait_before_the_crds_exist(both) -> None:
    names = [f"crd/{name}" for name in CRDS]
    standin, real = both.answers("get", *names)
    assert real[0] == 1
    assert standin == real
    standin, real = both.answers("wait", "--for", "condition=established", "--timeout", "5s", *names)
    assert real[0] == 1 and "NotFound" in real[2]  # at once, not after the timeout
    assert standin == real


def test_the_crd_wait_once_they_are_established(both) -> None:
    for name in CRDS:
        both.add("customresourcedefinitions", crd(name))
        both.kube_api.update_object("customresourcedefinitions", name, {"status": {"conditions": [
            {"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]}})
    names = [f"crd/{name}" for name in CRDS]
    standin, real = both.answers("get", *names, "-o", "name")
    assert real[0] == 0
    assert standin == real
    standin, real = both.answers("wait", "--for", "condition=established", "--timeout", "5s", *names)
    assert real[0] == 0
    assert standin == real


def test_get_f_answers_for_a_manifests_objects(both, tmp_path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n---\n"
                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kube-system}\n")
    standin, real = both.answers("get", "-f", str(manifest), "-o", "name")
    assert real[0] == 1
    assert standin == real
    both.add("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "settings", "namespace": "kube-system"}})
    standin, real = both.answers("get", "-f", str(manifest), "-o", "name")
    assert real[0] == 0
    assert standin == real


def test_nothing_listening(tmp_path) -> None:
    """Before init (no object store) the stand-in answers as kubectl does when nothing listens."""
    # a token, as admin.conf has credentials (client certificates): kubectl would prompt without any
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port()}", token="t")
    args = ("-n", "kube-system", "get", "deployment/coredns", "-o", "name")
    real = answer(real_kubectl(kubeconfig, *args))
    assert real[0] == 1
    assert answer(standin_kubectl(tmp_path / "standin", kubeconfig, *args)) == real
