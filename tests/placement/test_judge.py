"""Verdicts from observations (labkit.placement.judge): pure, no cluster."""

from __future__ import annotations

import pytest

from labkit.placement.judge import (
    MISS,
    PASS,
    PodState,
    bound_after_restart,
    even_spread,
    ignored,
    labelled_node,
    one_per_node,
    preempted,
    spread,
    unschedulable,
    water_fill,
)

FIT_ERROR = ("0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
             "2 node(s) didn't have label network-topology=high-speed requested by pod annotation x.")


def pod(node=None, events=(), condition=None, phase="Pending", name="p"):
    obj = {"metadata": {"name": name}, "spec": {"nodeName": node},
           "status": {"phase": phase, "conditions": [condition] if condition else []}}
    return PodState.from_api(obj, events)


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
FAILED = {"reason": "FailedScheduling", "message": FIT_ERROR, "reportingComponent": "my-custom-scheduler"}


@pytest.mark.parametrize(("before", "count", "after"), [
    ({"a": 0, "b": 0}, 4, [2, 2]),
    ({"a": 0, "b": 0, "c": 0}, 4, [1, 1, 2]),
    ({"a": 5, "b": 1}, 2, [3, 5]),  # the batch goes to the emptier node first
    ({"a": 5, "b": 1}, 6, [6, 6]),
    ({"a": 3}, 2, [5]),
])
def test_water_fill(before, count, after):
    assert water_fill(before, count) == after


def test_spread_passes_when_counts_level_out():
    verdict = spread({"w1": 2, "w2": 1}, {"s1": "w2", "s2": "w1", "s3": "w2", "s4": "w2"}, ["w1", "w2"])
    assert verdict.verdict == PASS
    assert verdict.reason == "pods per node (before+new): w1 2+1, w2 1+3; max-min 1"


def test_spread_misses_when_a_loaded_node_gets_pods_an_emptier_one_should_have():
    verdict = spread({"w1": 3, "w2": 0}, {"s1": "w1", "s2": "w2"}, ["w1", "w2"])
    assert verdict.verdict == MISS and "not least-loaded" in verdict.reason and "[2, 3]" in verdict.reason


def test_spread_misses_on_unbound_and_stray_pods():
    assert "1 of 2 pods not bound: s2" in spread({"w1": 0}, {"s1": "w1", "s2": None}, ["w1"]).reason
    stray = spread({"w1": 0}, {"s1": "cp"}, ["w1"])
    assert stray.verdict == MISS and "s1->cp" in stray.reason
    assert spread({}, {}, []).verdict == MISS


def test_labelled_node():
    assert labelled_node(pod("w1"), ["w1"], "k=v").verdict == PASS
    miss = labelled_node(pod("w2"), ["w1"], "k=v")
    assert miss.verdict == MISS and miss.reason == "bound to w2, which lacks k=v (labelled: w1)"
    pending = labelled_node(pod(events=[FAILED]), ["w1"], "k=v")
    assert pending.verdict == MISS and pending.reason.startswith("not bound: 0/3 nodes are available")


def test_unschedulable_needs_the_event_form_node_count_label_and_condition():
    assert unschedulable(pod(events=[FAILED], condition=UNSCHEDULABLE), 3, "network-topology").verdict == PASS
    assert "counts 3 nodes, the cluster has 4" in unschedulable(
        pod(events=[FAILED], condition=UNSCHEDULABLE), 4, "network-topology").reason
    assert "does not name the missing label" in unschedulable(
        pod(events=[FAILED], condition=UNSCHEDULABLE), 3, "other-label").reason
    assert "PodScheduled condition is none" in unschedulable(pod(events=[FAILED]), 3, "network-topology").reason
    assert "no FailedScheduling event" in unschedulable(pod(condition=UNSCHEDULABLE), 3, "x").reason
    wrong_form = {**FAILED, "message": "no nodes available to schedule pods"}
    assert "form" in unschedulable(pod(events=[wrong_form], condition=UNSCHEDULABLE), 3, "x").reason
    assert unschedulable(pod("w1"), 3, "x").verdict == MISS


def test_ignored():
    assert ignored(pod(), 5).verdict == PASS
    assert "some scheduler serves" in ignored(pod("w1"), 5).reason
    assert "has events" in ignored(pod(events=[FAILED]), 5).reason
    assert "PodScheduled" in ignored(pod(condition=UNSCHEDULABLE), 5).reason


def test_bound_after_restart():
    assert bound_after_restart(pod(), pod("w1"), 3, 1.5, 1).verdict == PASS
    assert "another instance" in bound_after_restart(pod("w1"), pod("w1"), 3, 0, 1).reason
    assert "still Pending" in bound_after_restart(pod(), pod(), 3, None, 1).reason
    assert "reported on while" in bound_after_restart(pod(events=[FAILED]), pod("w1"), 3, 1.0, 1).reason


ANTI_AFFINITY_FAILED = {"reason": "FailedScheduling", "reportingComponent": "my-custom-scheduler", "message": (
    "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
    "2 node(s) didn't match pod anti-affinity rules.")}


def test_one_per_node_needs_each_eligible_node_once_and_the_rest_pending_for_anti_affinity():
    states = [pod("w1", name="a-1"), pod("w2", name="a-2"), pod(events=[ANTI_AFFINITY_FAILED], name="a-3")]
    verdict = one_per_node(states, ["w1", "w2"])
    assert verdict.verdict == PASS
    assert verdict.reason.startswith("one each on w1, w2; a-3 Pending: 0/3 nodes are available")
    doubled = one_per_node([pod("w1", name="a-1"), pod("w1", name="a-2"), pod("w2", name="a-3")], ["w1", "w2"])
    assert doubled.verdict == MISS and doubled.reason.startswith("nodes holding more than one: w1 x2")
    other = {**ANTI_AFFINITY_FAILED, "message": "0/3 nodes are available: 3 Insufficient cpu."}
    wrong_reason = one_per_node([pod("w1", name="a-1"), pod("w2", name="a-2"), pod(events=[other], name="a-3")],
                                ["w1", "w2"])
    assert wrong_reason.verdict == MISS and "does not say \"node(s) didn't match pod anti-affinity rules\"" in (
        wrong_reason.reason)
    empty = one_per_node([pod("w1", name="a-1"), pod(events=[ANTI_AFFINITY_FAILED], name="a-2")], ["w1", "w2"])
    assert empty.verdict == MISS and empty.reason.startswith("no pod on w2, eligible; 1 Pending: 0/3")
    assert "no FailedScheduling event" in one_per_node([pod("w1"), pod(name="a-2")], ["w1"]).reason
    assert "outside the eligible nodes" in one_per_node([pod("cp")], ["w1"]).reason
    assert one_per_node([], []).verdict == MISS


def test_even_spread_needs_every_pod_bound_within_max_skew():
    five = [pod(n, name=f"s-{i}") for i, n in enumerate(["w1", "w2", "w1", "w2", "w1"])]
    verdict = even_spread(five, ["w1", "w2"])
    assert verdict.verdict == PASS and verdict.reason == "pods per node: w1 3, w2 2; max-min 1 (maxSkew 1)"
    lopsided = even_spread([pod("w1", name=f"s-{i}") for i in range(3)] + [pod("w2", name="s-3")], ["w1", "w2"])
    assert lopsided.verdict == MISS and lopsided.reason == "pods per node: w1 3, w2 1; max-min 2 > maxSkew 1"
    idle = even_spread([pod("w1", name="s-1"), pod("w1", name="s-2")], ["w1", "w2"])
    assert idle.verdict == MISS and "w1 2, w2 0" in idle.reason
    pending = even_spread([pod("w1", name="s-1"), pod(events=[FAILED], name="s-2")], ["w1", "w2"])
    assert pending.verdict == MISS and pending.reason.startswith("1 of 2 pods not bound (s-2): 0/3 nodes")
    assert "s-1->cp" in even_spread([pod("cp", name="s-1")], ["w1"]).reason


PREEMPTED = {"reason": "Preempted", "message": "Preempted by pod u-1 on node w1", "reportingComponent": "s"}


@pytest.mark.parametrize(("after", "high", "verdict", "reason"), [
    ([PodState("low1-1", None, "Deleted", events=(pod(events=[PREEMPTED]).events)), pod("w2", name="low2-1")],
     pod("w1", name="preemption-1"), PASS, "bound to w1 after preempting low1-1 (Preempted by pod u-1 on node w1)"),
    ([PodState("low1-1", None, "Deleted"), pod("w2", name="low2-1")],
     pod("w1", name="preemption-1"), MISS, "low1-1 was deleted without a Preempted event"),
    ([pod("w1", name="low1-1"), PodState("low2-1", None, "Deleted")],
     pod("w1", name="preemption-1"), MISS, "bound to w1, but the preempted low2-1 was on w2"),
    ([pod("w1", name="low1-1"), pod("w2", name="low2-1")],
     pod(None, events=[FAILED], name="preemption-1"), MISS, "not bound; 0 low-priority pod(s) preempted: 0/3"),
    ([PodState("low1-1", None, "Deleted"), PodState("low2-1", None, "Deleted")],
     pod("w1", name="preemption-1"), MISS, "after 2 low-priority pods went (want exactly 1)"),
])
def test_preempted(after, high, verdict, reason):
    result = preempted({"low1-1": "w1", "low2-1": "w2"}, after, high)
    assert result.verdict == verdict
    assert reason in result.reason
