"""Pods with PersistentVolumeClaims end to end: the scheduler over HTTP against the Kubernetes API test server
(kubeapi_testserver, a stand-in for kube-apiserver). No PV controller runs there: a test binds a claim by writing
what that controller writes (spec.volumeName, the pv.kubernetes.io/bind-completed annotation, phase Bound)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.runtime.queue import UNSCHEDULABLE
from tests.scheduler.builders import claim_obj, claim_volume, on_node, pv_obj, storage_class_obj
from tests.scheduler_api.harness import our_pod, pod_events, running_scheduler

pytestmark = pytest.mark.api


def bind_claim(kube_api: Any, claim: str, volume: str) -> None:
    """What the PV controller does on binding a claim (pkg/controller/volume/persistentvolume bindClaimToVolume,
    then the status update)."""
    def bound(old: dict) -> dict:
        meta = {**old["metadata"],
                "annotations": {**(old["metadata"].get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}}
        return {**old, "metadata": meta, "spec": {**old["spec"], "volumeName": volume}, "status": {"phase": "Bound"}}
    kube_api.update_object("persistentvolumeclaims", claim, bound, namespace="default")


def failed_scheduling(kube_api: Any, name: str) -> str:
    kube_api.wait_for(lambda: pod_events(kube_api, name, "FailedScheduling"))
    return pod_events(kube_api, name, "FailedScheduling")[0]["message"]


def test_pod_with_a_claim_bound_to_a_local_pv_lands_on_the_pvs_node(kube_api, kube_api_kubeconfig) -> None:
    for name in ("n1", "n2", "n3"):
        kube_api.add_node(name)
    kube_api.create_object("persistentvolumes", pv_obj("pv-data", node_terms=on_node("n2")))
    kube_api.create_object("persistentvolumeclaims", claim_obj("data"))
    bind_claim(kube_api, "data", "pv-data")
    with running_scheduler(kube_api_kubeconfig):
        for i in range(3):
            kube_api.add_pod(our_pod(f"db-{i}", volumes=[claim_volume("data")]))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 3)
        assert set(kube_api.bound_pods().values()) == {"n2"}


def test_wait_for_first_consumer_claim_is_reported_and_bound_once_someone_binds_it(
        kube_api, kube_api_kubeconfig) -> None:
    """We bind no volumes: the pod is not bound, its FailedScheduling event says why and what to do. When
    another party (kube-scheduler's PV binding, an operator) binds the claim, the claim's update brings the
    pod back and it lands on the PV's node."""
    kube_api.add_node("n1")
    kube_api.add_node("n2")
    kube_api.create_object("storageclasses", storage_class_obj("local", "WaitForFirstConsumer"))
    kube_api.create_object("persistentvolumes", pv_obj("pv-1", node_terms=on_node("n1")))
    kube_api.create_object("persistentvolumeclaims", claim_obj("data", storage_class="local"))
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod(our_pod("db", volumes=[claim_volume("data")]))
        assert failed_scheduling(kube_api, "db") == (
            '0/2 nodes are available: persistentvolumeclaim "data" is unbound and its StorageClass "local" binds '
            "on first use (volumeBindingMode WaitForFirstConsumer), which this scheduler does not do: schedule this "
            "pod with the default scheduler (leave spec.schedulerName unset) or run this one as a scheduler "
            "extender, or bind the claim first. not found")
        kube_api.wait_for(lambda: sched.queue.counts()[UNSCHEDULABLE] == 1)
        assert kube_api.bound_pods() == {}
        bind_claim(kube_api, "data", "pv-1")
        kube_api.wait_for(lambda: kube_api.bound_pods() == {"default/db": "n1"}, timeout=10)


def test_missing_claim_is_reported_and_the_pod_bound_once_the_claim_is(kube_api, kube_api_kubeconfig) -> None:
    """A claim VolumeBinding's PreFilter refuses: the message ends as kube-scheduler 1.36's, whose
    DynamicResources PostFilter, its PreFilter never run, fails with "not found" before preemption runs
    (the recorded kube-scheduler v1.36.2 corpus's repro-missing-claim state)."""
    kube_api.add_node("n1")
    kube_api.create_object("persistentvolumes", pv_obj("pv-1"))
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod(our_pod("db", volumes=[claim_volume("data")]))
        assert failed_scheduling(kube_api, "db") == (
            '0/1 nodes are available: persistentvolumeclaim "data" not found. not found')
        kube_api.wait_for(lambda: sched.queue.counts()[UNSCHEDULABLE] == 1)
        kube_api.create_object("persistentvolumeclaims", claim_obj("data"))  # unbound: the PV controller's turn
        kube_api.wait_for(lambda: any(e["message"] == "0/1 nodes are available: pod has unbound immediate "
                                                      "PersistentVolumeClaims. not found"
                                      for e in pod_events(kube_api, "db", "FailedScheduling")))
        assert kube_api.bound_pods() == {}
        bind_claim(kube_api, "data", "pv-1")
        kube_api.wait_for(lambda: kube_api.bound_pods() == {"default/db": "n1"}, timeout=10)
