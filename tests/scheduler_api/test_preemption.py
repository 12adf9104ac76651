"""Preemption end to end: the real scheduler against the Kubernetes API test server (kubeapi_testserver), with
PriorityClasses resolved by its Priority admission stand-in, graceful pod deletion (victims stay
Terminating until the test plays the kubelet) and PodDisruptionBudgets whose status the test writes (no
disruption controller there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver import running_server
from tests.scheduler_api.harness import SCHEDULER, config_with, our_pod, pod_events, running_scheduler

pytestmark = pytest.mark.api


def priority_class(kube_api: Any, name: str, value: int, **extra: Any) -> None:
    kube_api.create_object("priorityclasses", {"metadata": {"name": name}, "value": value, **extra})


def pod_with(name: str, cpu: str, priority_class_name: str, labels: dict[str, str] | None = None,
             node_name: str | None = None) -> dict[str, Any]:
    pod = our_pod(name, container={"resources": {"requests": {"cpu": cpu}}}, priorityClassName=priority_class_name)
    if labels:
        pod["metadata"]["labels"] = labels
    if node_name:
        pod["spec"]["nodeName"] = node_name
    return pod


def status_of(kube_api: Any, name: str) -> dict[str, Any]:
    return (kube_api.get_object("pods", name, "default") or {}).get("status") or {}


def test_preemption_evicts_nominates_and_keeps_the_room(tmp_path: Path) -> None:
    with running_server(graceful_pod_deletion=True) as kube_api:
        kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
        kube_api.add_node("w1", cpu="2")
        priority_class(kube_api, "low", 10)
        priority_class(kube_api, "high", 1000)
        priority_class(kube_api, "mid-never", 100, preemptionPolicy="Never")
        with running_scheduler(kubeconfig, config_with()):
            for name in ("low-1", "low-2"):
                kube_api.add_pod(pod_with(name, "1", "low"))
            kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2)

            kube_api.add_pod(pod_with("high-1", "2", "high"))
            kube_api.wait_for(lambda: status_of(kube_api, "high-1").get("nominatedNodeName") == "w1")
            kube_api.wait_for(lambda: len(kube_api.terminating_pods("default")) == 2)
            high_uid = kube_api.get_object("pods", "high-1", "default")["metadata"]["uid"]
            for victim in ("low-1", "low-2"):
                event = kube_api.wait_for(lambda v=victim: pod_events(kube_api, v, "Preempted"))[0]
                assert event["message"] == f"Preempted by pod {high_uid} on node w1"
                assert event["type"] == "Normal"
                assert event["related"]["name"] == "high-1"
                condition = next(c for c in status_of(kube_api, victim)["conditions"]
                                 if c["type"] == "DisruptionTarget")
                assert (condition["reason"], condition["message"]) == (
                    "PreemptionByScheduler", f"{SCHEDULER}: preempting to accommodate a higher priority pod")
            assert kube_api.wait_for(lambda: pod_events(kube_api, "high-1", "FailedScheduling"))[0]["message"] == (
                "0/1 nodes are available: 1 Insufficient cpu.")

            # A lower-priority pod that may not preempt arrives while the victims terminate.
            kube_api.add_pod(pod_with("mid-1", "1", "mid-never"))
            assert kube_api.wait_for(lambda: pod_events(kube_api, "mid-1", "FailedScheduling"))[0]["message"] == (
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to "
                "preemptionPolicy=Never.")
            # One victim gone: 1 cpu is free, enough for mid-1, but high-1 is nominated there.
            kube_api.finish_pod_deletion("low-1")
            kube_api.wait_for(lambda: len(pod_events(kube_api, "mid-1", "FailedScheduling")) >= 2
                              or "default/mid-1" in kube_api.bound_pods())
            assert "default/mid-1" not in kube_api.bound_pods()

            kube_api.finish_pod_deletion("low-2")
            kube_api.wait_for(lambda: kube_api.bound_pods().get("default/high-1") == "w1")
            assert "default/mid-1" not in kube_api.bound_pods()


def test_a_pdb_steers_preemption_to_the_node_whose_eviction_violates_none(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("w1", cpu="1")
    kube_api.add_node("w2", cpu="1")
    priority_class(kube_api, "lowest", 10)
    priority_class(kube_api, "low", 20)
    priority_class(kube_api, "high", 1000)
    # Without a budget w1 is the better candidate: its victim has the lower priority.
    kube_api.add_pod(pod_with("guarded", "1", "lowest", labels={"app": "db"}, node_name="w1"))
    kube_api.add_pod(pod_with("plain", "1", "low", node_name="w2"))
    kube_api.create_object("poddisruptionbudgets", {
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})
    kube_api.update_object("poddisruptionbudgets", "db",
                           {"status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                                       "expectedPods": 1}}, "default")
    with running_scheduler(kube_api_kubeconfig, config_with()) as sched:
        kube_api.add_pod(pod_with("high-1", "1", "high"))
        kube_api.wait_for(lambda: status_of(kube_api, "high-1").get("nominatedNodeName"))
        assert status_of(kube_api, "high-1")["nominatedNodeName"] == "w2"
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/high-1") == "w2")
        registry = sched.metrics.registry
        assert registry.get_sample_value("scheduler_preemption_attempts_total") == 1
        assert registry.get_sample_value("scheduler_preemption_victims_sum") == 1
    assert kube_api.get_object("pods", "guarded", "default") is not None
    assert kube_api.get_object("pods", "plain", "default") is None


def test_no_victims_message(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("w1", cpu="1")
    priority_class(kube_api, "high", 1000)
    kube_api.add_pod(pod_with("first", "1", "high", node_name="w1"))
    with running_scheduler(kube_api_kubeconfig, config_with()):
        kube_api.add_pod(pod_with("second", "1", "high"))
        event = kube_api.wait_for(lambda: pod_events(kube_api, "second", "FailedScheduling"))[0]
    assert event["message"] == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are "
                                "available: 1 No preemption victims found for incoming pod.")
    assert kube_api.get_object("pods", "first", "default") is not None


def test_a_victim_replaced_under_its_name_is_not_evicted(tmp_path: Path) -> None:
    """A victim is deleted and a pod of the same name (which no preemption may evict) created on its node
    just before the DisruptionTarget patch about the victim is served (forced): the patch carries the
    victim's UID and is refused, the victim counts as gone, and the successor is neither marked nor deleted."""
    with running_server(graceful_pod_deletion=True) as kube_api:
        kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
        kube_api.add_node("w1", cpu="2")
        priority_class(kube_api, "low", 10)
        priority_class(kube_api, "high", 1000)

        def replace(record) -> None:
            kube_api.remove_pod("low-1")
            kube_api.add_pod(pod_with("low-1", "1", "high", node_name="w1"))

        kube_api.before_next(1, replace, method="PATCH", path="/pods/low-1/status$")
        with running_scheduler(kubeconfig, config_with()):
            for name in ("low-1", "low-2"):
                kube_api.add_pod(pod_with(name, "1", "low"))
            kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2)
            kube_api.add_pod(pod_with("high-1", "2", "high"))
            kube_api.wait_for(lambda: status_of(kube_api, "high-1").get("nominatedNodeName") == "w1")
            kube_api.wait_for(lambda: pod_events(kube_api, "low-2", "Preempted"))
        successor = kube_api.get_object("pods", "low-1", "default")
        assert successor["spec"]["priority"] == 1000
        assert not successor["metadata"].get("deletionTimestamp")
        assert [c for c in status_of(kube_api, "low-1").get("conditions") or [] if c["type"] == "DisruptionTarget"] == []
        assert kube_api.request_count("delete", "pods", path="/pods/low-1$") == 0
        assert kube_api.request_count("patch", "pods/status", path="/pods/low-1/status$", code=422) == 1
