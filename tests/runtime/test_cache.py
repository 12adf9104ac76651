"""Cache: assumed pods count at once, confirm/forget/expire, incremental snapshots, orphans."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import ClusterView, Profile, per_node_memo
from scheduler.model import NodeInfo, NodeTraits, PodInfo
from scheduler.runtime.cache import Cache
from tests.scheduler.builders import node_obj


def node(name: str, cpu: str = "2", rv: str = "1") -> dict:
    return {
        "metadata": {"name": name, "resourceVersion": rv},
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}},
    }


def pod_obj(name: str, cpu: str = "500m", node_name: str | None = None, uid: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}, "spec": spec}


def pod(name: str, cpu: str = "500m", node_name: str | None = None) -> PodInfo:
    return PodInfo.from_api(pod_obj(name, cpu, node_name))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_assumed_pod_counts_before_bind_and_confirm_does_not_double() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume(pod("a"), "n1")
    assert cache.snapshot().get("n1").requested.milli_cpu == 500
    assert cache.is_assumed("uid-a")
    cache.finish_binding("uid-a")
    cache.add_pod(pod("a", node_name="n1"))  # the watch shows it bound
    assert not cache.is_assumed("uid-a")
    assert cache.snapshot().get("n1").requested.milli_cpu == 500
    assert cache.counts() == {"nodes": 1, "pods": 1, "assumed_pods": 0}


def test_forget_releases_capacity() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume(pod("a"), "n1")
    cache.forget("uid-a")
    assert cache.snapshot().get("n1").requested.milli_cpu == 0
    assert not cache.has_pod("uid-a")


def test_forget_ignores_confirmed_pods() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", node_name="n1"))
    cache.forget("uid-a")
    assert cache.has_pod("uid-a")


def test_assumed_pod_expires_only_after_binding_finished_and_ttl() -> None:
    clock = Clock()
    cache = Cache(assumed_ttl=30, clock=clock)
    cache.add_node(node("n1"))
    cache.assume(pod("a"), "n1")
    clock.now = 100
    assert cache.cleanup() == []  # still binding: never expires mid-call
    cache.finish_binding("uid-a")
    clock.now = 129
    assert cache.cleanup() == []
    clock.now = 130
    assert [p.name for p in cache.cleanup()] == ["a"]
    assert cache.snapshot().get("n1").requested.milli_cpu == 0


def test_snapshot_is_isolated_from_later_changes() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    snap_node = cache.snapshot().get("n1")
    cache.add_pod(pod("a", node_name="n1"))
    assert snap_node.requested.milli_cpu == 0  # the old clone is untouched
    assert cache.snapshot().get("n1").requested.milli_cpu == 500


def test_snapshot_reclones_only_changed_nodes() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    first = cache.snapshot()
    n2_before = first.get("n2")
    cache.add_pod(pod("a", node_name="n1"))
    second = cache.snapshot()
    assert second.get("n2") is n2_before
    assert len(second.nodes) == 2


def test_pod_before_its_node_is_counted_when_node_arrives() -> None:
    cache = Cache()
    cache.add_pod(pod("a", node_name="late"))
    cache.add_node(node("late"))
    assert cache.snapshot().get("late").pod_count == 1


def test_node_removal_and_pod_delete() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", node_name="n1"))
    cache.remove_node("n1")
    assert cache.snapshot().get("n1") is None
    assert cache.remove_pod("uid-a").name == "a"
    cache.add_node(node("n1"))
    assert cache.snapshot().get("n1").pod_count == 0


def test_node_update_keeps_pods() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", node_name="n1"))
    cache.add_node(node("n1", cpu="4", rv="2"))
    info = cache.snapshot().get("n1")
    assert info.allocatable.milli_cpu == 4000 and info.requested.milli_cpu == 500


def test_assume_twice_or_unknown_node_is_refused() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume(pod("a"), "n1")
    with pytest.raises(ValueError):
        cache.assume(pod("a"), "n1")
    with pytest.raises(KeyError):
        cache.assume(pod("b"), "gone")


def test_snapshot_keeps_the_pod_index_and_its_kept_answers_current() -> None:
    """The inter-pod affinity counts a snapshot's index answered once follow pods added, moved, relabelled
    and removed, and namespaces relabelled, as an index built afresh from the same nodes answers."""
    from scheduler.model.affinity import Requirement
    from scheduler.model.labels import LabelSelector
    from scheduler.model.pod_affinity import AffinityTerm
    from scheduler.model.pod_index import PodIndex

    def grouped(name: str, node_name: str, group: str = "g") -> PodInfo:
        obj = pod_obj(name, "10m", node_name)
        obj["metadata"]["labels"] = {"group": group}
        obj["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": "zone",
             "namespaceSelector": {"matchLabels": {"team": "x"}}}]}}
        return PodInfo.from_api(obj)

    term = AffinityTerm("zone", LabelSelector((Requirement("group", "In", frozenset({"g"})),)),
                        frozenset(), LabelSelector((Requirement("team", "In", frozenset({"x"})),)))
    cache = Cache()
    for i in range(4):
        cache.add_node({**node(f"n{i}"), "metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}}})
    cache.set_namespace("default", {"team": "x"})
    for i in range(40):  # enough pods for the answers to be kept between snapshots
        cache.add_pod(grouped(f"p{i}", f"n{i % 4}"))

    def answers(index: PodIndex) -> tuple:
        return (index.matching(term), index.anti_affinity_against("default", {"group": "g"}))

    assert answers(cache.snapshot().pod_index) == ({("zone", "z0"): 20, ("zone", "z1"): 20},) * 2
    cache.add_pod(grouped("p0", "n1"))  # moved from n0 to n1
    cache.add_pod(grouped("p1", "n1", group="other"))  # relabelled
    cache.remove_pod("uid-p2")
    cache.assume(grouped("new", None), "n0")
    snap = cache.snapshot()
    fresh = answers(PodIndex.of(snap.nodes, snap.namespace_labels))
    # z0: 20 - p0 moved - p2 removed + new; z1: 20 + p0 - p1 relabelled
    assert answers(snap.pod_index) == fresh == ({("zone", "z0"): 19, ("zone", "z1"): 20},) * 2
    cache.add_node({**node("n3"), "metadata": {"name": "n3", "labels": {"zone": "z0"}}})  # relabelled
    cache.remove_node("n2")  # its pods count nowhere until it is back
    snap = cache.snapshot()
    fresh = answers(PodIndex.of(snap.nodes, snap.namespace_labels))
    # z0: n0 (10) + n3 (10, now in z0); z1: n1 (10)
    assert answers(snap.pod_index) == fresh == ({("zone", "z0"): 20, ("zone", "z1"): 10},) * 2
    cache.set_namespace("default", {"team": "y"})
    assert answers(cache.snapshot().pod_index) == ({}, {})


def test_add_pod_returns_the_version_the_watch_showed_before() -> None:
    """None when the watch shows the pod for the first time, an assumed pod's confirmation included (pods
    rejected before it was assumed never saw it: to them it is an assigned pod added); else the last
    version the watch showed."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume(pod("a"), "n1")
    assert cache.add_pod(pod("a", node_name="n1")) is None
    confirmed = pod("a", node_name="n1")
    cache.add_pod(confirmed)
    assert cache.add_pod(pod("a", node_name="n1")) is confirmed


def _free_milli_cpu(nodes: list[NodeInfo]) -> list[int]:
    return [n.allocatable.milli_cpu - n.requested.milli_cpu for n in nodes]


def test_a_changed_node_keeps_its_memo_values_worked_out_again() -> None:
    """per_node_memo values of a node the snapshot re-clones are worked out again on the new clone (so the
    next read misses none), from the node's new state."""
    cache = Cache()
    cache.add_node(node("n0"))
    cache.add_node(node("n1"))
    assert per_node_memo("free cpu", cache.snapshot().nodes, _free_milli_cpu) == [2000, 2000]
    cache.assume(pod("a"), "n0")
    snap = cache.snapshot()
    assert snap.get("n0").memo == {"free cpu": 1500}
    assert per_node_memo("free cpu", snap.nodes, _free_milli_cpu) == [1500, 2000]


def test_a_memo_value_that_cannot_be_worked_out_again_is_left_to_the_plugin() -> None:
    def cpu_per_free_milli(nodes: list[NodeInfo]) -> list[int]:
        return [1000 // free for free in _free_milli_cpu(nodes)]

    cache = Cache()
    cache.add_node(node("n0", cpu="1"))
    assert per_node_memo("per free", cache.snapshot().nodes, cpu_per_free_milli) == [1]
    cache.assume(pod("a", cpu="1"), "n0")  # no cpu left: the value divides by zero
    snap = cache.snapshot()
    assert snap.get("n0").memo == {}
    with pytest.raises(ZeroDivisionError):  # as the plugin's own read meets it (and handles it)
        per_node_memo("per free", snap.nodes, cpu_per_free_milli)


def test_snapshot_traits_follow_cordons_taints_images_and_removed_nodes() -> None:
    """The snapshot counts its cordoned, tainted and image-listing nodes as they change: plugins skip their
    pass over the nodes by these counts, so a stale count would let a pod onto a cordoned node."""
    cache = Cache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(node_obj(name))
    assert cache.snapshot().traits == NodeTraits(0, 0, 0)
    cache.add_node(node_obj("n1", unschedulable=True, images=[{"names": ["app:1"], "sizeBytes": 10}]))
    cache.add_node(node_obj("n2", taints=[{"key": "k", "effect": "NoSchedule"}]))
    snap = cache.snapshot()
    assert snap.traits == NodeTraits(cordoned=1, tainted=1, with_images=1)
    assert snap.traits == NodeTraits.of(snap.nodes)
    rng = random.Random(1)
    cluster = ClusterView(snap.nodes, traits=snap.traits)
    placed = {Profile.default().schedule(pod(f"p{i}"), snap.nodes, rng, cluster).node_name for i in range(10)}
    assert placed == {"n3"}
    cache.add_node(node_obj("n1"))
    cache.remove_node("n2")
    snap = cache.snapshot()
    assert snap.traits == NodeTraits(0, 0, 0) == NodeTraits.of(snap.nodes)
