"""Verdicts from observations (labkit.placement.judge): pure, no cluster."""

from __future__ import annotations

import pytest

from labkit.placement.judge import (
    MISS,
    PASS,
    PodState,
    all_bound,
    all_or_none,
    bound_after_restart,
    bound_to,
    none_bound,
    pending,
    preempted,
    spread,
    untouched,
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


def placed(mapping):
    return [pod(node, name=name) for name, node in mapping.items()]


def test_spread_counting_all_passes_when_counts_level_out():
    verdict = spread(placed({"s1": "w2", "s2": "w1", "s3": "w2", "s4": "w2"}), ["w1", "w2"], 1, {"w1": 2, "w2": 1})
    assert verdict.verdict == PASS
    assert verdict.reason == "pods per node (before+new): w1 2+1, w2 1+3; max-min 1"


def test_spread_counting_all_misses_when_a_loaded_node_gets_pods_an_emptier_one_should_have():
    verdict = spread(placed({"s1": "w1", "s2": "w2"}), ["w1", "w2"], 1, {"w1": 3, "w2": 0})
    assert verdict.verdict == MISS and verdict.reason.endswith("w1 3+1, w2 0+1; max-min 3 > 1")
    # too few pods to level w1's 5: every one must go to w2
    uneven = spread(placed({"s1": "w1", "s2": "w2"}), ["w1", "w2"], 1, {"w1": 5, "w2": 0})
    assert uneven.verdict == MISS and "not as level as the batch could make them" in uneven.reason
    assert "[2, 5]" in uneven.reason
    level = spread(placed({"s1": "w2", "s2": "w2"}), ["w1", "w2"], 1, {"w1": 5, "w2": 0})
    assert level.verdict == PASS and "as level as 2 pods make them" in level.reason


def test_spread_counting_the_scenario_pods_only():
    five = placed({f"s-{i}": n for i, n in enumerate(["w1", "w2", "w1", "w2", "w1"])})
    verdict = spread(five, ["w1", "w2"], 1)
    assert verdict.verdict == PASS and verdict.reason == "pods per node: w1 3, w2 2; max-min 1"
    lopsided = spread(placed({"s-1": "w1", "s-2": "w1", "s-3": "w1", "s-4": "w2"}), ["w1", "w2"], 1)
    assert lopsided.verdict == MISS and lopsided.reason == "pods per node: w1 3, w2 1; max-min 2 > 1"
    idle = spread(placed({"s-1": "w1"}), ["w1", "w2"], 0)
    assert idle.verdict == MISS and "w1 1, w2 0" in idle.reason
    assert spread(placed({"s-1": "w1", "s-2": "w2"}), ["w1", "w2"], 0).verdict == PASS


def test_spread_misses_on_stray_pods_and_no_eligible_node():
    stray = spread(placed({"s1": "cp"}), ["w1"], 1, {"w1": 0})
    assert stray.verdict == MISS and "s1->cp" in stray.reason
    assert spread([], [], 1).verdict == MISS


def test_all_bound_names_the_pending_pods_and_why():
    assert all_bound([pod("w1")]) is None
    miss = all_bound([pod("w1", name="a-1"), pod(events=[FAILED], name="a-2")])
    assert miss.verdict == MISS and miss.reason.startswith("1 of 2 pods not bound (a-2): 0/3 nodes are available")
    assert "no FailedScheduling event" in all_bound([pod()]).reason


def test_bound_to_the_matching_nodes():
    assert bound_to([pod("w1")], ["w1"], "nodes with k=v").reason == "bound to w1 (nodes with k=v)"
    miss = bound_to([pod("w2")], ["w1"], "nodes with k=v")
    assert miss.verdict == MISS and miss.reason == "p bound to w2, not to nodes with k=v (w1)"
    assert "(none)" in bound_to([pod("w2")], [], "nodes with k=v").reason


def test_pending_needs_the_event_form_node_count_reason_and_condition():
    assert pending([pod(events=[FAILED], condition=UNSCHEDULABLE)], None, "network-topology", 3).verdict == PASS
    assert "counts 3 nodes, the cluster has 4" in pending(
        [pod(events=[FAILED], condition=UNSCHEDULABLE)], None, "network-topology", 4).reason
    assert "does not say 'other-label'" in pending(
        [pod(events=[FAILED], condition=UNSCHEDULABLE)], None, "other-label", 3).reason
    assert "PodScheduled condition is none" in pending([pod(events=[FAILED])], None, None, 3).reason
    assert "no FailedScheduling event" in pending([pod(condition=UNSCHEDULABLE)], None, "x", 3).reason
    wrong_form = {**FAILED, "message": "no nodes available to schedule pods"}
    assert "form" in pending([pod(events=[wrong_form], condition=UNSCHEDULABLE)], None, "x", 3).reason
    bound = pending([pod("w1", name="a-1")], None, "x", 3)
    assert bound.verdict == MISS and bound.reason.startswith("0 of 1 pods Pending, expected 1 (bound: a-1->w1)")


ANTI_AFFINITY_FAILED = {"reason": "FailedScheduling", "reportingComponent": "my-custom-scheduler", "message": (
    "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
    "2 node(s) didn't match pod anti-affinity rules.")}
ANTI = "node(s) didn't match pod anti-affinity rules"


def test_pending_counts_the_pods_left_over():
    states = [pod("w1", name="a-1"), pod("w2", name="a-2"),
              pod(events=[ANTI_AFFINITY_FAILED], condition=UNSCHEDULABLE, name="a-3")]
    verdict = pending(states, 1, ANTI, 3)
    assert verdict.verdict == PASS and verdict.reason.startswith("a-3 Pending, PodScheduled=False Unschedulable: 0/3")
    assert pending(states, 2, ANTI, 3).reason.startswith("1 of 3 pods Pending, expected 2")


def test_untouched():
    assert untouched([pod()], 5).verdict == PASS
    assert "some scheduler serves" in untouched([pod("w1")], 5).reason
    assert "has events" in untouched([pod(events=[FAILED])], 5).reason
    assert "PodScheduled" in untouched([pod(condition=UNSCHEDULABLE)], 5).reason


def test_bound_after_restart():
    assert bound_after_restart(pod(), pod("w1"), 3, 1.5, 1).verdict == PASS
    assert "another instance" in bound_after_restart(pod("w1"), pod("w1"), 3, 0, 1).reason
    assert "still Pending" in bound_after_restart(pod(), pod(), 3, None, 1).reason
    assert "reported on while" in bound_after_restart(pod(events=[FAILED]), pod("w1"), 3, 1.0, 1).reason


PREEMPTED = {"reason": "Preempted", "message": "Preempted by pod u-1 on node w1", "reportingComponent": "s"}


@pytest.mark.parametrize(("after", "high", "verdict", "reason"), [
    ([PodState("low1-1", None, "Deleted", events=(pod(events=[PREEMPTED]).events)), pod("w2", name="low2-1")],
     pod("w1", name="preemption-1"), PASS, "bound to w1 after preempting low1-1 (Preempted by pod u-1 on node w1)"),
    ([PodState("low1-1", None, "Deleted"), pod("w2", name="low2-1")],
     pod("w1", name="preemption-1"), MISS, "low1-1 was deleted without a Preempted event"),
    ([pod("w1", name="low1-1"), PodState("low2-1", None, "Deleted")],
     pod("w1", name="preemption-1"), MISS, "preemption-1 bound to w1, but the preempted were low2-1 on w2"),
    ([pod("w1", name="low1-1"), pod("w2", name="low2-1")],
     pod(None, events=[FAILED], name="preemption-1"), MISS,
     "preemption-1 not bound; 0 lower-priority pod(s) preempted: 0/3"),
    ([PodState("low1-1", None, "Deleted"), PodState("low2-1", None, "Deleted")],
     pod("w1", name="preemption-1"), MISS, "after 2 lower-priority pods went (want exactly 1)"),
])
def test_preempted(after, high, verdict, reason):
    result = preempted({"low1-1": "w1", "low2-1": "w2"}, after, [high], 1)
    assert result.verdict == verdict
    assert reason in result.reason


def test_all_or_none_passes_whole_and_empty_sets_and_counts_the_whole_ones():
    sets = {"a": [pod("w1", name="a-1"), pod("w2", name="a-2")],
            "b": [pod(name="b-1", events=[FAILED]), pod(name="b-2")]}
    passed = all_or_none(sets, 1)
    assert passed.verdict == PASS and passed.reason == "a: 2 bound (w1, w2); b: none bound"
    wrong_count = all_or_none(sets, None)
    assert wrong_count.verdict == MISS
    assert wrong_count.reason == (f"1 of 2 set(s) bound whole, expected 2: a: 2 bound (w1, w2); b: none bound: "
                                  f"{FIT_ERROR}")


def test_all_or_none_misses_a_half_bound_set_naming_it():
    sets = {"a": [pod("w1", name="a-1"), pod("w1", name="a-2"), pod(name="a-3", events=[FAILED])]}
    verdict = all_or_none(sets, 0)
    assert verdict.verdict == MISS
    assert verdict.reason == f"set a: 2 of 3 bound (w1 x2), a-3 not: all or none expected: {FIT_ERROR}"


def test_none_bound_allows_events_but_no_binding():
    assert none_bound([pod(events=[FAILED], name="a")], 5).verdict == PASS
    missed = none_bound([pod(name="a"), pod("w1", name="b")], 5)
    assert missed.verdict == MISS and missed.reason == "1 of 2 pods bound within 5 s: b->w1"
