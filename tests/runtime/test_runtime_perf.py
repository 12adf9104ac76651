"""Behaviour kept by the runtime's performance changes: in-place snapshot updates with a stable node order,
the cheap assumed-pod copy, and rate-limited logging of events dropped when the event queue is full."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

import pytest

from scheduler.model import PodInfo
from scheduler.runtime.cache import Cache, zone_key
from scheduler.runtime.events import EventRecorder
from tests.runtime.test_cache import Clock, node, pod


def _names(cache: Cache) -> list[str]:
    return [info.name for info in cache.snapshot().nodes]


def _check_index(cache: Cache) -> None:
    snap = cache.snapshot()
    assert snap.index == {info.name: i for i, info in enumerate(snap.nodes)}
    assert [snap.by_name[name] for name in snap.index] == snap.nodes


def test_snapshot_updates_dirty_nodes_in_place_and_keeps_order() -> None:
    cache = Cache()
    for name in ("a", "b", "c", "d"):
        cache.add_node(node(name))
    first = cache.snapshot()
    nodes_list, a_before = first.nodes, first.get("a")
    cache.assume(pod("p1"), "c")
    cache.add_pod(pod("p2", node_name="b"))
    snap = cache.snapshot()
    assert snap.nodes is nodes_list  # not rebuilt: no node added or removed
    assert _names(cache) == ["a", "b", "c", "d"]
    assert snap.nodes[2].pod_count == 1 and snap.nodes[1].pod_count == 1
    assert snap.nodes[0] is a_before  # unchanged nodes are not re-cloned
    assert snap.nodes[2] is snap.get("c")
    _check_index(cache)


def test_snapshot_rebuilds_on_add_and_remove_keeping_order() -> None:
    cache = Cache()
    for name in ("a", "b", "c"):
        cache.add_node(node(name))
    cache.snapshot()
    cache.add_node(node("d"))
    cache.add_pod(pod("p1", node_name="a"))
    assert _names(cache) == ["a", "b", "c", "d"]
    _check_index(cache)
    cache.remove_node("b")
    cache.add_pod(pod("p2", node_name="c"))
    assert _names(cache) == ["a", "c", "d"]
    assert cache.snapshot().get("c").pod_count == 1
    _check_index(cache)
    cache.add_node(node("b"))  # re-added: goes to the end, as a new node does
    assert _names(cache) == ["a", "c", "d", "b"]
    _check_index(cache)
    cache.remove_node("zz")  # unknown: nothing changes
    cache.add_node(node("a", cpu="4", rv="2"))  # update: same position
    assert _names(cache) == ["a", "c", "d", "b"]
    assert cache.snapshot().nodes[0].allocatable.milli_cpu == 4000


def test_assumed_copy_equals_dataclasses_replace() -> None:
    original = PodInfo.from_api(
        {
            "metadata": {"name": "x", "namespace": "ns", "uid": "u-x", "labels": {"app": "w"}},
            "spec": {
                "priority": 7,
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            },
        }
    )
    cache = Cache(keep_pod_objects=True)  # else the copy drops the object, as the watch's version does
    cache.add_node(node("n1"))
    assumed = cache.assume(original, "n1")
    expected = dataclasses.replace(original, node_name="n1")
    assert assumed is not original and original.node_name is None
    for f in dataclasses.fields(PodInfo):
        assert getattr(assumed, f.name) == getattr(expected, f.name), f.name
    assert type(assumed) is PodInfo


class _BlockedClient:
    """Stand-in for scheduler.runtime.client.Client whose writes wait until released (a slow API server)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.posted = 0

    def post(self, path: str, body: dict, *, read_answer: bool = True) -> None:
        self.release.wait(10)
        self.posted += 1

    def patch(self, path: str, body: dict) -> None:
        self.release.wait(10)


def _wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached within 5 s"
        time.sleep(0.01)


def _drop_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("event queue full")]


def test_dropped_events_are_counted_and_logged_first_then_summed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="scheduler")
    clock = Clock()
    client = _BlockedClient()
    recorder = EventRecorder(
        client,
        workers=1,
        capacity=2,
        hostname="h",
        drop_log_interval=3600.0,
        clock=clock,  # type: ignore[arg-type]
    )
    pods = [pod(f"p{i}") for i in range(40)]
    recorder.scheduled(pods[0], "n1", "sched")
    _wait_until(lambda: recorder._queue.qsize() == 0)  # the worker holds the first write
    for p in pods[1:23]:
        recorder.scheduled(p, "n1", "sched")
    first = recorder.dropped  # two wait in the queue, the rest are dropped
    assert first == 20
    lines = _drop_lines(caplog)
    assert len(lines) == 1 and "dropped 1 event(s)" in lines[0]  # the first drop, at once
    clock.now = 3601.0
    recorder.scheduled(pods[30], "n1", "sched")
    lines = _drop_lines(caplog)
    assert len(lines) == 2 and f"dropped {first} more event(s)" in lines[1]
    assert f"({first + 1} in total)" in lines[1]
    recorder.scheduled(pods[31], "n1", "sched")  # within the interval: counted, not logged yet
    assert recorder.dropped == first + 2 and len(_drop_lines(caplog)) == 2
    client.release.set()
    recorder.close()  # reports what is left
    lines = _drop_lines(caplog)
    assert len(lines) == 3 and "dropped 1 more event(s)" in lines[2]
    assert client.posted == 23 + 2 - recorder.dropped


def test_idle_worker_logs_the_drops_of_a_finished_burst(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="scheduler")
    client = _BlockedClient()
    recorder = EventRecorder(client, workers=1, capacity=1, hostname="h", drop_log_interval=0.05)  # type: ignore[arg-type]
    for i in range(10):
        recorder.scheduled(pod(f"p{i}"), "n1", "sched")
    dropped = recorder.dropped
    assert dropped >= 8
    client.release.set()
    assert recorder.flush(5)
    _wait_until(lambda: len(_drop_lines(caplog)) >= 2)  # the idle worker wakes every interval
    lines = _drop_lines(caplog)
    assert len(lines) == 2 and f"({dropped} in total)" in lines[1]
    recorder.close()


def _zoned(name: str, zone: str | None, region: str | None = None) -> dict:
    obj = node(name)
    labels = {}
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
    if region is not None:
        labels["topology.kubernetes.io/region"] = region
    obj["metadata"]["labels"] = labels
    return obj


def test_snapshot_order_is_kube_schedulers_node_tree_zones_interleaved() -> None:
    """kube-scheduler lists nodes round robin over zones (in the order each zone first appeared), so a
    search from any start sees the zones in turn; a zone emptied and filled again comes last."""
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c"), ("n1", None)]:
        cache.add_node(_zoned(name, zone))
    assert _names(cache) == ["a1", "b1", "c1", "n1", "a2", "c2", "a3"]
    _check_index(cache)
    cache.remove_node("b1")
    cache.add_node(_zoned("b2", "b"))
    assert _names(cache) == ["a1", "c1", "n1", "b2", "a2", "c2", "a3"]
    # a node moving zones keeps its place until a node is added or removed, then joins its new zone's end
    cache.add_node(_zoned("a1", "c"))
    assert _names(cache) == ["a1", "c1", "n1", "b2", "a2", "c2", "a3"]
    cache.add_node(_zoned("a4", "a"))
    assert _names(cache) == ["a2", "c1", "n1", "b2", "a3", "c2", "a4", "a1"]
    _check_index(cache)


def test_zone_key_reads_region_and_zone_as_kube_scheduler() -> None:
    assert zone_key(_zoned("x", None)) == ""
    assert zone_key(_zoned("x", "z1")) == ":\x00:z1"
    assert zone_key(_zoned("x", None, region="r")) == "r:\x00:"
    beta = _zoned("x", "ga")
    beta["metadata"]["labels"]["failure-domain.beta.kubernetes.io/zone"] = "beta"
    assert zone_key(beta) == ":\x00:beta"  # GetZoneKey reads the beta label first
