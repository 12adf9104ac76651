"""The gang scheduler of examples/coscheduling in the real scheduler against the API test server, its PodGroup
CRD created there from the folder's crds/ as deploy-scheduler applies it: a gang is bound whole or not at all,
one that cannot fit holds nothing once its timeout passes, and two gangs with room for one never deadlock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config import parse_config
from scheduler.framework import build_profiles, load_registry
from scheduler.runtime.client import Client, load_configuration
from scheduler.runtime.scheduler import RuntimeSettings, Scheduler
from tests import bundled_plugins
from tests.faults.invariants import assert_placed_safely, binds_per_pod
from tests.scheduler_api.harness import SCHEDULER, pod_events

pytestmark = pytest.mark.api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coscheduling"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def podgroup(name: str, min_member: int, timeout: int = 30) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout}}


@pytest.fixture
def gang_scheduler(kube_api, kube_api_kubeconfig):
    for crd in yaml.safe_load_all((EXAMPLE / "crds" / "podgroup.yaml").read_text()):
        kube_api.create_object("customresourcedefinitions", crd)
    registry = load_registry([str(EXAMPLE)], base=bundled_plugins.registry(), entry_points=False)
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "leaderElection": {"leaderElect": False},
              "profiles": [{"schedulerName": SCHEDULER,
                            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                        "queueSort": {"disabled": [{"name": "PrioritySort"}]}}}]}
    cfg = parse_config(config, "config", registry)
    assert cfg.point_problems() == []
    client = Client(load_configuration(str(kube_api_kubeconfig)), qps=0, burst=100, pool_size=16)
    sched = Scheduler(client, build_profiles(cfg, registry), RuntimeSettings(serve=(), seed=1, bind_workers=4))
    assert sched.unserved_kinds() == []
    sched.start()
    assert sched.wait_synced(10)
    yield sched
    sched.stop()


def _members(kube_api: Any, group: str, count: int, cpu: str) -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        kube_api.add_pod(name, cpu=cpu, scheduler_name=SCHEDULER, labels={GROUP_LABEL: group})
    return names


def _bound(kube_api: Any, names: list[str]) -> int:
    bound = kube_api.bound_pods("default")
    return sum(f"default/{n}" in bound for n in names)


def _nodes(kube_api: Any, sched: Scheduler, count: int, cpu: str) -> None:
    kube_api.add_nodes(count, prefix="n-", cpu=cpu)
    kube_api.wait_for(lambda: len(sched.cache.counts()) and sched.cache.node(f"n-{count - 1}"))


def test_a_gang_is_gated_until_complete_then_bound_whole(kube_api, gang_scheduler) -> None:
    _nodes(kube_api, gang_scheduler, 4, "2")
    kube_api.create_object("podgroups.scheduling.x-k8s.io", podgroup("train", 4))
    names = _members(kube_api, "train", 3, "1")
    kube_api.wait_for(lambda: len(gang_scheduler.queue.gated()) == 3)
    assert _bound(kube_api, names) == 0
    names += [f"train-{i}" for i in range(3, 4)]
    kube_api.add_pod("train-3", cpu="1", scheduler_name=SCHEDULER, labels={GROUP_LABEL: "train"})
    kube_api.wait_for(lambda: _bound(kube_api, names) == 4)
    assert_placed_safely(kube_api, names)


def test_a_gang_that_cannot_fit_binds_none_and_holds_nothing_after_its_timeout(kube_api, gang_scheduler) -> None:
    """Three members of 2 cpu on two nodes of 2 cpu: two are placed and wait, the third fits nowhere; no member
    is bound, and once the gang gives up, a pod needing a whole node is bound on either."""
    _nodes(kube_api, gang_scheduler, 2, "2")
    kube_api.create_object("podgroups.scheduling.x-k8s.io", podgroup("big", 3, timeout=2))
    names = _members(kube_api, "big", 3, "2")
    kube_api.wait_for(lambda: any(pod_events(kube_api, n, "FailedScheduling") for n in names))
    kube_api.add_pod("whole-node", cpu="2", scheduler_name=SCHEDULER)
    kube_api.wait_for(lambda: _bound(kube_api, ["whole-node"]) == 1, timeout=30)
    assert _bound(kube_api, names) == 0
    assert len(gang_scheduler.waiting) <= 1  # at most the member holding the other node, until its timeout


def test_two_gangs_competing_for_room_for_one_never_deadlock(kube_api, gang_scheduler) -> None:
    """Two gangs of three 1-cpu members on three 1-cpu nodes: room for one gang. One is bound whole, the other
    stays unbound, every binding once."""
    _nodes(kube_api, gang_scheduler, 3, "1")
    kube_api.create_object("podgroups.scheduling.x-k8s.io", podgroup("a", 3, timeout=3))
    kube_api.create_object("podgroups.scheduling.x-k8s.io", podgroup("b", 3, timeout=3))
    a = [f"a-{i}" for i in range(3)]
    b = [f"b-{i}" for i in range(3)]
    for i in range(3):  # interleaved arrivals: the worst case for a scheduler without a gang queue order
        kube_api.add_pod(a[i], cpu="1", scheduler_name=SCHEDULER, labels={GROUP_LABEL: "a"})
        kube_api.add_pod(b[i], cpu="1", scheduler_name=SCHEDULER, labels={GROUP_LABEL: "b"})
    kube_api.wait_for(lambda: _bound(kube_api, a) == 3 or _bound(kube_api, b) == 3, timeout=60)
    winner, loser = (a, b) if _bound(kube_api, a) == 3 else (b, a)
    assert _bound(kube_api, loser) == 0
    assert all(n == 1 for n in binds_per_pod(kube_api).values())
    assert_placed_safely(kube_api, winner)
