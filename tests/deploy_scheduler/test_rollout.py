"""Waiting for the scheduler's rollout, and what a failed one prints.

`rollout_status` follows `kubectl rollout status` (kubectl/pkg/polymorphichelpers/rollout_status.go):
observedGeneration first, then ProgressDeadlineExceeded, updated / old / available replicas.
The HTTP tests run against kubeapi_testserver, the in-repo Kubernetes API test server (a stand-in for
kube-apiserver: it stores Deployments but runs no controllers, so the test writes their status).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labdef.errors import UserError
from labdef.lab import load_lab
from labkit.kube import Kube, KubeError
from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.apply import apply
from labkit.scheduler_deploy.manifests import render_manifests, selector_labels
from labkit.scheduler_deploy.rollout import rollout_status, wait_for_rollout

LAB = load_lab()


def deployment(generation: int = 2, observed: int = 2, replicas: int = 1, updated: int = 1, total: int = 1,
               available: int = 1, conditions: list | None = None) -> dict:
    return {"metadata": {"name": "sched", "generation": generation},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "replicas": total,
                       "availableReplicas": available, "conditions": conditions or []}}


@pytest.mark.parametrize(("dep", "done", "failed", "words"), [
    (deployment(), True, False, "successfully rolled out"),
    (deployment(generation=3, observed=2), False, False, "observe the new spec"),
    (deployment(updated=0, available=0), False, False, "0 of 1 new replicas"),
    (deployment(total=2), False, False, "1 old replicas are pending termination"),
    (deployment(available=0), False, False, "0 of 1 updated replicas are available"),
    (deployment(available=0, conditions=[{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}]),
     False, True, "progress deadline"),
])
def test_rollout_status_reads_like_kubectl(dep: dict, done: bool, failed: bool, words: str) -> None:
    state = rollout_status(dep)
    assert (state.done, state.failed) == (done, failed)
    assert words in state.message


def _store_deployment(kube_api, ready: bool) -> None:
    dep = next(o for m in render_manifests(LAB, "localhost/kubelab-scheduler:x") for o in m.objects
               if o["kind"] == "Deployment")
    created = kube_api.create_object("deployments", dep)
    status = {"observedGeneration": created["metadata"].get("generation", 1), "replicas": 1, "updatedReplicas": 1,
              "availableReplicas": 1 if ready else 0}
    kube_api.update_object("deployments", dep["metadata"]["name"], {"status": status}, LAB.scheduler.namespace)


@pytest.mark.api
def test_wait_returns_once_rolled_out(kube_api, kube_api_kubeconfig: Path) -> None:
    _store_deployment(kube_api, ready=True)
    lines: list[str] = []
    wait_for_rollout(Kube.from_kubeconfig(kube_api_kubeconfig), LAB, timeout=5, echo=lines.append, sleep=lambda s: None)
    assert lines[-1].endswith("successfully rolled out")


@pytest.mark.api
def test_failed_rollout_shows_the_pods_events_and_waiting_reason(kube_api, kube_api_kubeconfig: Path) -> None:
    _store_deployment(kube_api, ready=False)
    ns = LAB.scheduler.namespace
    pod = kube_api.add_pod("sched-abc", ns, labels=selector_labels(LAB), node_name="node-0")
    kube_api.update_pod("sched-abc", {"status": {"containerStatuses": [{
        "name": "scheduler", "ready": False, "restartCount": 0, "image": "x", "imageID": "",
        "state": {"waiting": {"reason": "ErrImageNeverPull",
                              "message": 'Container image "x" is not present with pull policy of Never'}}}]}}, ns)
    kube_api.create_object("events", {
        "metadata": {"name": "sched-abc.1", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": "sched-abc", "namespace": ns, "uid": pod["metadata"]["uid"]},
        "reason": "ErrImageNeverPull", "type": "Warning",
        "message": 'Container image "x" is not present with pull policy of Never'})
    text = _failed_rollout(kube_api_kubeconfig)
    assert "0 of 1 updated replicas are available" in text
    assert "pod sched-abc: Pending (ErrImageNeverPull" in text
    assert "event Warning ErrImageNeverPull" in text
    # a container that never started has no log: the kubelet's 400 ("... is waiting to start: ErrImageNeverPull")
    assert "last 20 log lines:\n    (no logs: 400" in text


@pytest.mark.api
def test_failed_rollout_reads_each_containers_log_in_extender_mode(kube_api, kube_api_kubeconfig: Path) -> None:
    """kube-apiserver refuses a log request without a container name for a pod with several containers
    (400: "a container name must be specified"): extender mode's pod has two, so each is asked by name."""
    _store_deployment(kube_api, ready=False)
    ns = LAB.scheduler.namespace
    pod = kube_api.add_pod("sched-two", ns, labels=selector_labels(LAB), node_name="node-0")
    kube_api.update_pod("sched-two", {"spec": {**pod["spec"], "containers": [
        {**pod["spec"]["containers"][0], "name": name} for name in ("kube-scheduler", "extender")]}}, ns)
    text = _failed_rollout(kube_api_kubeconfig)
    # asked by name, each gets the kubelet's answer for a container with no status yet (400 "... is not
    # available"), not the API server's 400 for a missing container name
    assert "last 20 log lines of kube-scheduler:\n    (no logs: 400" in text
    assert "last 20 log lines of extender:\n    (no logs: 400" in text


@pytest.mark.api
def test_apply_names_the_object_the_server_refused(kube_api, kube_api_kubeconfig: Path) -> None:
    """An apply the server refuses (RBAC here): the error names the request and the object."""
    kube_api.fail_next(1, 403, verb="patch", resource="serviceaccounts")
    with pytest.raises(KubeError, match=r"PATCH /api/v1/namespaces/kube-system/serviceaccounts/my-custom-scheduler"):
        apply(Kube.from_kubeconfig(kube_api_kubeconfig), render_manifests(LAB, "x:1"), echo=lambda s: None)


def test_unreachable_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=str(tmp_path / "missing")):
        Kube.from_kubeconfig(tmp_path / "missing")


def _failed_rollout(kubeconfig: Path) -> str:
    """The DeployError's text of a rollout wait that times out (10 s on a simulated clock)."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(DeployError) as err:
        wait_for_rollout(Kube.from_kubeconfig(kubeconfig), LAB, timeout=10, echo=lambda s: None,
                         clock=lambda: now[0], sleep=sleep)
    return str(err.value)
