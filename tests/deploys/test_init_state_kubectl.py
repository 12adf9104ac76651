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
import subprocess
from pathlib import Path

import pytest

from deploys import facts
from deploys.facts import InitState, KubeadmInitState
from tests.debian_testing import closed_port, debian_testing_kubectl

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
    port = closed_port()
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

