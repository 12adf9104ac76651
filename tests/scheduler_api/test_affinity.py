"""Inter-pod affinity end to end over HTTP against the Kubernetes API test server (kubeapi_testserver): replicas
with required anti-affinity spread one per node, the one too many is reported as kube-scheduler reports it
and placed once a replica goes, and a namespaceSelector reads the namespaces the scheduler watches."""

from __future__ import annotations

from typing import Any

import pytest

from kubeapi_testserver.objects import make_pod
from tests.scheduler_api.harness import SCHEDULER, pod_condition, pod_events, running_scheduler

pytestmark = pytest.mark.api

HOST = "kubernetes.io/hostname"


def anti_affinity(labels: dict[str, str], **term: Any) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": HOST, **term}]}}


def replica(name: str, namespace: str = "default", **term: Any) -> dict[str, Any]:
    """One pod of a Deployment-like set: labelled app=web, refusing nodes that hold another."""
    pod = make_pod(name, namespace, cpu="100m", scheduler_name=SCHEDULER, labels={"app": "web"})
    pod["spec"]["affinity"] = anti_affinity({"app": "web"}, **term)
    return pod


def test_replicas_with_required_anti_affinity_get_one_node_each(kube_api, kube_api_kubeconfig) -> None:
    for name in ("n1", "n2", "n3"):
        kube_api.add_node(name, labels={HOST: name})
    names = [f"web-{i}" for i in range(4)]
    with running_scheduler(kube_api_kubeconfig):
        for name in names:
            kube_api.add_pod(replica(name))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 3
                          and any(pod_events(kube_api, n, "FailedScheduling") for n in names))
        bound = kube_api.bound_pods()
        assert sorted(bound.values()) == ["n1", "n2", "n3"]
        (extra,) = [n for n in names if f"default/{n}" not in bound]
        kube_api.wait_for(lambda: pod_condition(kube_api, extra))
        message = pod_events(kube_api, extra, "FailedScheduling")[0]["message"]
        assert message == ("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: "
                           "0/3 nodes are available: 3 No preemption victims found for incoming pod.")
        assert pod_condition(kube_api, extra)["reason"] == "Unschedulable"

        # A replica gone frees its node: the waiting one is retried (a pod deleted) and takes it.
        gone = min(bound)
        freed = bound[gone]
        kube_api.remove_pod(gone.split("/")[1])
        kube_api.wait_for(lambda: kube_api.bound_pods().get(f"default/{extra}") == freed, timeout=20)


def test_namespace_selector_reads_namespace_labels(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1", labels={HOST: "n1"})
    kube_api.create_object("namespaces", {"metadata": {"name": "team-x", "labels": {"team": "x"}}})
    kube_api.add_pod(make_pod("web-x", "team-x", cpu="100m", node_name="n1", labels={"app": "web"}))
    selector = {"namespaceSelector": {"matchLabels": {"team": "x"}}}
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod(replica("web-default", **selector))
        kube_api.add_pod(make_pod("free", cpu="100m", scheduler_name=SCHEDULER, labels={"app": "web"}))
        kube_api.wait_for(lambda: pod_events(kube_api, "web-default", "FailedScheduling"))
        kube_api.wait_for(lambda: "default/free" in kube_api.bound_pods())
    assert pod_events(kube_api, "web-default", "FailedScheduling")[0]["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.")


def test_pod_waiting_for_its_affinity_is_placed_when_a_matching_pod_is_bound(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1", labels={HOST: "n1"})
    kube_api.add_node("n2", labels={HOST: "n2"})
    web = make_pod("web", cpu="100m", scheduler_name=SCHEDULER, labels={"app": "web"})
    web["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}]}}
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod(web)
        kube_api.wait_for(lambda: pod_events(kube_api, "web", "FailedScheduling"))
        assert pod_events(kube_api, "web", "FailedScheduling")[0]["message"] == (
            "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. no new claims to deallocate, preemption: 0/2 nodes are "
            "available: 2 Preemption is not helpful for scheduling.")
        # Bound by someone else (a pod added to the cache): the waiting pod is retried at once.
        kube_api.add_pod(make_pod("db", cpu="100m", node_name="n2", labels={"app": "db"}))
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/web") == "n2", timeout=20)
