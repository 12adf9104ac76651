"""Topology spread end to end: the scheduler over HTTP against the Kubernetes API test server
(kubeapi_testserver, a stand-in for kube-apiserver), with zones as kubeadm clusters label them
(topology.kubernetes.io/zone)."""

from __future__ import annotations

from collections import Counter

import pytest

from kubeapi_testserver.objects import make_pod
from scheduler.runtime.queue import UNSCHEDULABLE
from tests.scheduler_api.harness import SCHEDULER, pod_events, running_scheduler

pytestmark = pytest.mark.api

ZONE = "topology.kubernetes.io/zone"
SPREAD = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def web_pod(name: str) -> dict:
    pod = make_pod(name, cpu="500m", scheduler_name=SCHEDULER, labels={"app": "web"})
    pod["spec"]["topologySpreadConstraints"] = SPREAD
    return pod


def test_do_not_schedule_spread_over_zones(kube_api, kube_api_kubeconfig) -> None:
    """Zone a has room for many pods, zone b for two (1 cpu, 500m each). Five pods end 3 in a and 2 in b:
    each placement kept the zones within maxSkew 1. A sixth would make a 4 against b's 2 and b is full, so
    it gets FailedScheduling naming both reasons; when a pod in b goes, it is retried and lands in b."""
    kube_api.add_node("a1", cpu="8", labels={ZONE: "a"})
    kube_api.add_node("b1", cpu="1", labels={ZONE: "b"})
    with running_scheduler(kube_api_kubeconfig):
        for i in range(5):
            kube_api.add_pod(web_pod(f"web-{i}"))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 5)
        assert Counter(kube_api.bound_pods().values()) == {"a1": 3, "b1": 2}
        kube_api.add_pod(web_pod("web-5"))
        kube_api.wait_for(lambda: pod_events(kube_api, "web-5", "FailedScheduling"))
        event = pod_events(kube_api, "web-5", "FailedScheduling")[0]
        assert event["message"] == ("0/2 nodes are available: 1 Insufficient cpu, "
                                    "1 node(s) didn't match pod topology spread constraints. no new claims to deallocate, preemption: "
                                    "0/2 nodes are available: 2 No preemption victims found for incoming pod.")
        in_b = next(key for key, node in kube_api.bound_pods().items() if node == "b1")
        kube_api.remove_pod(in_b.split("/")[1])
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/web-5") == "b1")


def test_pod_rejected_by_spread_is_retried_when_a_matching_pod_lands_elsewhere(kube_api, kube_api_kubeconfig) -> None:
    """Held to zone a by its nodeSelector, counting every zone (nodeAffinityPolicy: Ignore), the pod would
    make zone a 2 against zone b's 0. A matching pod bound in zone b by someone else (the watch shows it
    assigned) raises the minimum to 1, and the waiting pod is retried and bound in zone a."""
    kube_api.add_node("a1", labels={ZONE: "a"})
    kube_api.add_node("b1", labels={ZONE: "b"})
    kube_api.add_pod("web-a", labels={"app": "web"}, node_name="a1")
    pod = web_pod("held")
    pod["spec"]["nodeSelector"] = {ZONE: "a"}
    pod["spec"]["topologySpreadConstraints"] = [{**SPREAD[0], "nodeAffinityPolicy": "Ignore"}]
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod(pod)
        kube_api.wait_for(lambda: pod_events(kube_api, "held", "FailedScheduling"))
        kube_api.wait_for(lambda: sched.queue.where("default/held") == UNSCHEDULABLE)
        kube_api.add_pod("web-b", labels={"app": "web"}, node_name="b1")
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/held") == "a1")
