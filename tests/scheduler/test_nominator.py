"""Nominated pods (scheduler.runtime.nominator), as kube-scheduler's PodNominator keeps them."""

from __future__ import annotations

from scheduler.model import PodInfo
from scheduler.runtime.nominator import Nominator


def waiting(name: str, priority: int, nominated: str = "") -> PodInfo:
    return PodInfo(uid=f"uid-{name}", namespace="default", name=name, priority=priority,
                   nominated_node_name=nominated)


def test_nothing_nominated_costs_no_copy() -> None:
    assert Nominator().for_pod(waiting("p", 0)) == {}


def test_counted_for_pods_of_lower_or_equal_priority_never_for_itself() -> None:
    nominator = Nominator()
    high = waiting("high", 100)
    nominator.nominate(high, "n1")
    assert nominator.for_pod(waiting("mid", 100)) == {"n1": [high]}
    assert nominator.for_pod(waiting("top", 101)) == {}
    assert nominator.for_pod(high) == {}


def test_a_watch_update_without_the_field_keeps_the_nomination() -> None:
    # updateNominatedPodUnlocked: an update that predates our status patch must not drop the nomination.
    nominator = Nominator()
    nominator.nominate(waiting("p", 10), "n1")
    nominator.update(waiting("p", 10))
    assert nominator.node_of("uid-p") == "n1"
    nominator.update(waiting("p", 10, nominated="n2"))
    assert nominator.node_of("uid-p") == "n2"
    assert nominator.lower_priority_on("n2", 11) == [nominator.for_pod(waiting("q", 0))["n2"][0]]
    nominator.remove("uid-p")
    assert nominator.node_of("uid-p") is None and nominator.for_pod(waiting("q", 0)) == {}


def test_a_watch_update_that_removes_the_field_ends_the_nomination() -> None:
    # UpdateNominatedPod keeps an in-memory nomination only when the old and the new version both lack the
    # field: a version that removes it (another scheduler replica, or our own clearing seen late) ends it.
    nominator = Nominator()
    nominator.update(waiting("p", 10, nominated="n1"))  # a lagging event from before the nomination was cleared
    assert nominator.node_of("uid-p") == "n1"
    nominator.update(waiting("p", 10))  # the field removed
    assert nominator.node_of("uid-p") is None and nominator.for_pod(waiting("q", 0)) == {}
    nominator.nominate(waiting("p", 10), "n2")  # a later preemption of our own, not yet seen in status
    nominator.update(waiting("p", 10))  # neither version has the field: kept
    assert nominator.node_of("uid-p") == "n2"
