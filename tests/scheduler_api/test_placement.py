"""Placement by each plugin, end to end: the real scheduler, over HTTP, against kubeapi_testserver.

The API server is the in-repo test server (a stand-in for kube-apiserver + etcd; no kubelet runs, so
pods stay Pending after binding, which is all a scheduler can observe anyway).
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.scheduler_api.harness import SCHEDULER, config_with, our_pod, pod_events, running_scheduler

pytestmark = pytest.mark.api


def test_network_aware_config_prefers_high_speed_nodes(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(3, cpu="4")
    kube_api.add_node("fast-0", cpu="4", labels={"network-topology": "high-speed"})
    with running_scheduler(kube_api_kubeconfig):
        for i in range(4):
            kube_api.add_pod(
                f"net-{i}",
                cpu="100m",
                scheduler_name=SCHEDULER,
                annotations={"my-network-preference": "high-speed"},
            )
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 4)
    assert set(kube_api.bound_pods().values()) == {"fast-0"}


def test_other_schedulers_pods_are_never_touched(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(2)
    kube_api.add_pod("theirs", cpu="100m")  # default-scheduler
    kube_api.add_pod("mine", cpu="100m", scheduler_name=SCHEDULER)
    with running_scheduler(kube_api_kubeconfig):
        kube_api.wait_for(lambda: "default/mine" in kube_api.bound_pods())
    assert "default/theirs" not in kube_api.bound_pods()
    assert pod_events(kube_api, "theirs") == []


def test_least_loaded_pod_count_spreads_evenly(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(3, cpu="8")
    config = config_with([{"name": "LeastLoaded", "weight": 100}])
    with running_scheduler(kube_api_kubeconfig, config):
        kube_api.add_pods(9, cpu="10m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 9)
    counts = Counter(kube_api.bound_pods().values())
    assert max(counts.values()) - min(counts.values()) <= 1, counts


def test_least_loaded_most_allocated_packs(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(3, cpu="8")
    config = config_with(
        [{"name": "LeastLoaded", "weight": 100}],
        [{"name": "LeastLoaded", "args": {"strategy": "MostAllocated"}}],
    )
    with running_scheduler(kube_api_kubeconfig, config):
        for i in range(5):  # one at a time: each decision sees the previous binding
            kube_api.add_pod(f"pack-{i}", cpu="10m", scheduler_name=SCHEDULER)
            kube_api.wait_for(lambda n=i + 1: len(kube_api.bound_pods()) == n)
    assert len(set(kube_api.bound_pods().values())) == 1


def test_taints_avoided_unless_tolerated(kube_api, kube_api_kubeconfig) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    kube_api.add_node("tainted", taints=[taint])
    kube_api.add_node("plain")
    with running_scheduler(kube_api_kubeconfig):
        for i in range(3):
            kube_api.add_pod(f"plain-{i}", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.add_pod(
            "tolerant",
            cpu="100m",
            scheduler_name=SCHEDULER,
            node_selector={"kubernetes.io/hostname": "tainted"},
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        )
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 4)
    bound = kube_api.bound_pods()
    assert {bound[f"default/plain-{i}"] for i in range(3)} == {"plain"}
    assert bound["default/tolerant"] == "tainted"


def test_unschedulable_and_not_ready_nodes_skipped(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("cordoned", unschedulable=True)
    kube_api.add_node("down", ready=False)
    kube_api.add_node("ok")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pods(4, cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 4)
    assert set(kube_api.bound_pods().values()) == {"ok"}


def test_node_selector_and_required_affinity(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("a", labels={"zone": "a", "gen": "3"})
    kube_api.add_node("b", labels={"zone": "b", "gen": "5"})
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}
                ]
            }
        }
    }
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("by-selector", cpu="100m", scheduler_name=SCHEDULER, node_selector={"zone": "a"})
        kube_api.add_pod(our_pod("by-affinity", affinity=affinity))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2)
    assert kube_api.bound_pods() == {"default/by-selector": "a", "default/by-affinity": "b"}


def test_resources_fit_places_big_pod_on_big_node(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("small", cpu="1", memory="1Gi")
    kube_api.add_node("big", cpu="16", memory="64Gi")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("large", cpu="4", memory="8Gi", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/large" in kube_api.bound_pods())
    assert kube_api.bound_pods()["default/large"] == "big"


def test_host_ports_never_collide(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(2)
    with running_scheduler(kube_api_kubeconfig):
        ports = [{"containerPort": 80, "hostPort": 8080}]
        for i in range(2):
            kube_api.add_pod(our_pod(f"web-{i}", container={"ports": ports}))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2)
    assert len(set(kube_api.bound_pods().values())) == 2


def test_host_port_taken_on_the_preferred_node_sends_the_pod_elsewhere(kube_api, kube_api_kubeconfig) -> None:
    """Packing (MostAllocated) draws both pods to the busy node; only the one wanting its taken host port
    must go elsewhere."""
    ports = [{"containerPort": 80, "hostPort": 8080}]
    cpu = {"resources": {"requests": {"cpu": "100m"}}}
    kube_api.add_nodes(2, cpu="8")
    kube_api.add_pod(our_pod("holder", nodeName="node-0", container={"ports": ports, **cpu}))
    config = config_with(
        [{"name": "LeastLoaded", "weight": 100}],
        [{"name": "LeastLoaded", "args": {"strategy": "MostAllocated"}}],
    )
    with running_scheduler(kube_api_kubeconfig, config):
        kube_api.add_pod(our_pod("no-port", container=cpu))
        kube_api.add_pod(our_pod("web", container={"ports": ports, **cpu}))
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 3)
    bound = kube_api.bound_pods()
    assert (bound["default/no-port"], bound["default/web"]) == ("node-0", "node-1")


def test_two_profiles_serve_two_scheduler_names(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(2)
    config = config_with([{"name": "LeastLoaded"}]).replace(
        "profiles:\n", "profiles:\n- schedulerName: second-scheduler\n"
    )
    with running_scheduler(kube_api_kubeconfig, config) as sched:
        assert set(sched.profiles) == {SCHEDULER, "second-scheduler"}
        kube_api.add_pod("one", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.add_pod("two", cpu="100m", scheduler_name="second-scheduler")
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2)
    assert {e["reportingComponent"] for e in kube_api.events("default") if e["reason"] == "Scheduled"} == {
        SCHEDULER,
        "second-scheduler",
    }


def test_scheduling_gates_hold_a_pod_until_removed(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(1)
    gated = our_pod("gated", schedulingGates=[{"name": "example.com/quota"}])
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod(gated)
        kube_api.add_pod("witness", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/witness" in kube_api.bound_pods())
        assert "default/gated" not in kube_api.bound_pods() and "default/gated" not in sched.queue
        kube_api.update_pod("gated", lambda pod: {**pod, "spec": {**pod["spec"], "schedulingGates": []}})
        kube_api.wait_for(lambda: "default/gated" in kube_api.bound_pods())
