"""SchedulingQueue: ordering, backoff, unschedulable moves, dedup, deletion (fake clock, no threads)."""

from __future__ import annotations

import dataclasses

from scheduler.framework import Code, Status
from scheduler.framework.cluster_event import ClusterEvent
from scheduler.model import PodInfo
from scheduler.runtime.queue import ACTIVE, BACKOFF, GATED, IN_FLIGHT, UNSCHEDULABLE, SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int = 0, uid: str | None = None) -> PodInfo:
    return PodInfo(uid=uid or f"uid-{name}", namespace="default", name=name, priority=priority)


def make() -> tuple[SchedulingQueue, Clock]:
    clock = Clock()
    return SchedulingQueue(clock=clock), clock


def test_priority_then_fifo() -> None:
    q, clock = make()
    q.add(pod("low-1"))
    clock.now += 1
    q.add(pod("high", priority=10))
    clock.now += 1
    q.add(pod("low-2"))
    order = [q.pop(timeout=0).pod.name for _ in range(3)]
    assert order == ["high", "low-1", "low-2"]
    assert q.pop(timeout=0) is None


def test_dedup_by_key_keeps_newest_object() -> None:
    q, _ = make()
    q.add(pod("a"))
    newer = pod("a")
    newer.resource_version = "7"
    q.add(newer)
    got = q.pop(timeout=0)
    assert got.pod is newer
    assert q.pop(timeout=0) is None


def test_backoff_doubles_to_ten_seconds() -> None:
    q, _ = make()
    assert [q.backoff_duration(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_error_goes_to_backoff_then_active_after_expiry() -> None:
    q, clock = make()
    q.add(pod("a"))
    qp = q.pop(timeout=0)
    q.failed(qp, unschedulable=False)
    assert q.where("default/a") == BACKOFF
    assert q.pop(timeout=0) is None  # backoff of 1 s not over
    clock.now += 1.0
    again = q.pop(timeout=0)
    assert again is not None and again.attempts == 2
    q.failed(again, unschedulable=False)
    clock.now += 1.5
    assert q.pop(timeout=0) is None  # second backoff is 2 s
    clock.now += 0.5
    assert q.pop(timeout=0).attempts == 3


def test_unschedulable_waits_for_event() -> None:
    q, clock = make()
    q.add(pod("a"))
    q.failed(q.pop(timeout=0), unschedulable=True)
    assert q.where("default/a") == UNSCHEDULABLE
    clock.now += 30
    assert q.pop(timeout=0) is None
    q.move_for(ClusterEvent.NODE_ADDED)
    assert q.where("default/a") == ACTIVE  # backoff (1 s) long over
    assert q.pop(timeout=0).pod.name == "a"


def test_unschedulable_moved_to_backoff_if_event_comes_early() -> None:
    q, clock = make()
    q.add(pod("a"))
    q.failed(q.pop(timeout=0), unschedulable=True)
    clock.now += 0.2
    q.move_for(ClusterEvent.NODE_ADDED)
    assert q.where("default/a") == BACKOFF


def test_unschedulable_flushed_after_timeout() -> None:
    q, clock = make()
    q.add(pod("a"))
    q.failed(q.pop(timeout=0), unschedulable=True)
    clock.now += 59
    assert q.pop(timeout=0) is None
    clock.now += 1
    assert q.pop(timeout=0).pod.name == "a"


def test_event_during_flight_sends_failure_to_backoff() -> None:
    """A node added while the pod was being scheduled must not leave it waiting for the next event."""
    q, _ = make()
    q.add(pod("a"))
    qp = q.pop(timeout=0)
    q.move_for(ClusterEvent.NODE_ADDED)
    q.failed(qp, unschedulable=True)
    assert q.where("default/a") == BACKOFF


def test_delete_drops_queued_and_in_flight() -> None:
    q, _ = make()
    q.add(pod("a"))
    q.add(pod("b"))
    q.delete("default/a")
    qp = q.pop(timeout=0)
    assert qp.pod.name == "b"
    assert q.where("default/b") == IN_FLIGHT
    q.delete("default/b")
    q.failed(qp, unschedulable=True)
    assert "default/b" not in q
    assert q.pop(timeout=0) is None


def test_add_while_in_flight_does_not_queue_twice() -> None:
    q, _ = make()
    q.add(pod("a"))
    qp = q.pop(timeout=0)
    q.add(pod("a"))
    assert q.pop(timeout=0) is None
    q.done(qp.pod.key)
    assert "default/a" not in q


def test_bind_failure_after_done_requeues_with_history() -> None:
    q, clock = make()
    q.add(pod("a"))
    qp = q.pop(timeout=0)
    q.done(qp.pod.key)
    q.failed(qp, unschedulable=False)
    assert q.where("default/a") == BACKOFF
    clock.now += 1
    assert q.pop(timeout=0).attempts == 2


def test_counts_by_queue() -> None:
    q, _ = make()
    for name in "abc":
        q.add(pod(name))
    q.failed(q.pop(timeout=0), unschedulable=True)
    q.pop(timeout=0)
    assert q.counts() == {ACTIVE: 1, BACKOFF: 0, UNSCHEDULABLE: 1, IN_FLIGHT: 1, GATED: 0}


def test_status_only_update_does_not_retry_unschedulable_pod() -> None:
    q, clock = make()
    q.add(pod("a"))
    q.failed(q.pop(timeout=0), unschedulable=True)
    clock.now += 5
    q.add(pod("a"))  # e.g. our PodScheduled=False condition came back through the watch
    assert q.where("default/a") == UNSCHEDULABLE
    relabelled = pod("a")
    relabelled.labels = {"tier": "web"}
    q.add(relabelled)
    assert q.where("default/a") == ACTIVE


def test_unschedulable_timeout_moves_only_pods_old_enough() -> None:
    q, clock = make()
    q.add(pod("old"))
    q.add(pod("young"))
    q.failed(q.pop(timeout=0), unschedulable=True)
    clock.now += 30
    q.failed(q.pop(timeout=0), unschedulable=True)
    clock.now += 30
    assert q.pop(timeout=0).pod.name == "old"
    assert q.where("default/young") == UNSCHEDULABLE


def test_pod_recreated_while_in_flight_is_queued_after_the_old_one() -> None:
    q, _ = make()
    q.add(pod("a", uid="old"))
    qp = q.pop(timeout=0)
    q.delete("default/a")
    q.add(pod("a", uid="new"))
    assert q.pop(timeout=0) is None  # one pod per key at a time
    q.done("default/a")  # the cycle drops the old one (it is no longer pending)
    nxt = q.pop(timeout=0)
    assert nxt.pod.uid == "new" and nxt.attempts == 1
    q.failed(nxt, unschedulable=True)
    assert qp.pod.uid == "old"


def test_recreated_pod_survives_failure_of_the_old_one() -> None:
    q, _ = make()
    q.add(pod("a", uid="old"))
    qp = q.pop(timeout=0)
    q.add(pod("a", uid="new"))
    q.failed(qp, unschedulable=True)
    assert q.pop(timeout=0).pod.uid == "new"


def test_unschedulable_pod_waits_for_the_events_that_may_help_it() -> None:
    q, clock = make()
    q.add(pod("short-of-cpu"))
    q.failed(q.pop(timeout=0), unschedulable=True,
             requeue_on=ClusterEvent.NODE_ALLOCATABLE_CHANGED | ClusterEvent.POD_REQUESTS_CHANGED)
    clock.now += 5
    q.move_for(ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.NODE_TAINTS_CHANGED)
    assert q.where("default/short-of-cpu") == UNSCHEDULABLE
    relabelled = pod("short-of-cpu")
    relabelled.labels = {"tier": "web"}
    q.add(relabelled)  # no plugin that rejected it reads pod labels
    assert q.where("default/short-of-cpu") == UNSCHEDULABLE
    q.move_for(ClusterEvent.NODE_ALLOCATABLE_CHANGED)
    assert q.where("default/short-of-cpu") == ACTIVE


def test_unschedulable_pod_retried_when_it_changes_as_its_rejection_needs() -> None:
    q, clock = make()
    q.add(pod("a"))
    q.failed(q.pop(timeout=0), unschedulable=True, requeue_on=ClusterEvent.POD_REQUESTS_CHANGED)
    clock.now += 5
    smaller = pod("a")
    smaller.requests = dataclasses.replace(smaller.requests, milli_cpu=100)
    q.add(smaller)
    assert q.where("default/a") == ACTIVE


def test_queue_sort_plugin_orders_the_active_queue() -> None:
    """A QueueSort plugin's key replaces PrioritySort's: here by name, whatever the priority."""
    clock = Clock()
    q = SchedulingQueue(clock=clock, sort_key=lambda p, _at: p.name)
    for name, priority in (("c", 10), ("a", 0), ("b", 5)):
        q.add(pod(name, priority))
    assert [q.pop(timeout=0).pod.name for _ in range(3)] == ["a", "b", "c"]


def test_pre_enqueue_keeps_a_pod_gated_until_asked_again() -> None:
    """A PreEnqueue rejection keeps the pod out of the active queue with the plugin's status; asking again once
    the plugin's answer changes lets it in (kube-scheduler's gated pods)."""
    open_gate = {"g1": False}
    wait = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for the gang",), "Gang")

    def pre_enqueue(p: PodInfo) -> Status | None:
        return None if open_gate.get(p.name, True) else wait

    q = SchedulingQueue(clock=Clock(), pre_enqueue=pre_enqueue)
    q.add(pod("g1"))
    q.add(pod("other"))
    assert q.where("default/g1") == GATED
    assert [(p.name, status) for p, status in q.gated()] == [("g1", wait)]
    assert q.pop(timeout=0).pod.name == "other"
    assert q.pop(timeout=0) is None
    q.retry_gated()
    assert q.pop(timeout=0) is None  # the plugin still says no
    open_gate["g1"] = True
    q.move_for_kind("scheduling.x-k8s.io/v1alpha1/podgroups")
    assert q.pop(timeout=0).pod.name == "g1"
    assert q.gated() == []


def test_watched_kind_change_retries_the_pods_its_plugins_rejected() -> None:
    q, _ = make()
    for name in ("quota", "plain"):
        q.add(pod(name))
        qp = q.pop(timeout=0)
        kinds = frozenset({"v1/configmaps"}) if name == "quota" else frozenset()
        q.failed(qp, unschedulable=True, requeue_on=ClusterEvent.NONE, requeue_kinds=kinds)
    q.move_for_kind("v1/configmaps")
    assert q.where("default/quota") == BACKOFF
    assert q.where("default/plain") == UNSCHEDULABLE


def test_activate_moves_backoff_and_unschedulable_pods_to_active_and_leaves_others() -> None:
    q, _ = make()
    for name in ("waiting", "backing-off", "in-flight", "active"):
        q.add(pod(name))
    q.failed(q.pop(timeout=0), unschedulable=True)  # "waiting" (pods pop in the order added)
    q.failed(q.pop(timeout=0), unschedulable=False)  # "backing-off"
    flying = q.pop(timeout=0)
    assert (q.where("default/waiting"), q.where("default/backing-off")) == (UNSCHEDULABLE, BACKOFF)
    q.activate(["default/waiting", "default/backing-off", "default/in-flight", "default/active", "default/nope"])
    assert q.where("default/waiting") == ACTIVE and q.where("default/backing-off") == ACTIVE
    assert q.where("default/in-flight") == IN_FLIGHT and flying.pod.name == "in-flight"
    assert sorted(q.pop(timeout=0).pod.name for _ in range(3)) == ["active", "backing-off", "waiting"]
    assert q.pop(timeout=0) is None
