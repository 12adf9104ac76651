"""Verdicts: does what the cluster shows match what a scenario expects? Pure functions of observations.

Placement is judged by the binding (spec.nodeName), never by the scheduler's logs. Each function returns
a `Verdict` whose `reason` is the line a person reads in the table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PASS, MISS, SKIP = "pass", "miss", "skipped"
FIT_ERROR = re.compile(r"^0/(\d+) nodes are available")
# kube-scheduler's InterPodAffinity reason for a node where the pod's own required anti-affinity term matches
# a pod in the node's domain (ErrReasonAntiAffinityRulesNotMatch).
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"


@dataclass(frozen=True)
class Event:
    reason: str
    message: str
    source: str  # reporting controller / component
    type: str = ""

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Event:
        source = (obj.get("reportingComponent") or obj.get("reportingController")
                  or (obj.get("source") or {}).get("component") or "")
        return cls(str(obj.get("reason") or ""), str(obj.get("message") or obj.get("note") or ""), source,
                   str(obj.get("type") or ""))

    def __str__(self) -> str:
        by = f" ({self.source})" if self.source else ""
        return f"{self.reason}{by}: {self.message}"


@dataclass(frozen=True)
class PodState:
    """One pod as the runner last read it, with its events."""

    name: str
    node: str | None
    phase: str
    conditions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # by condition type
    events: tuple[Event, ...] = ()

    @classmethod
    def from_api(cls, obj: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()) -> PodState:
        status = obj.get("status") or {}
        conditions = {c.get("type", ""): c for c in status.get("conditions") or []}
        return cls(obj["metadata"]["name"], (obj.get("spec") or {}).get("nodeName") or None,
                   str(status.get("phase") or ""), conditions, tuple(Event.from_api(e) for e in events))

    @property
    def scheduled_condition(self) -> Mapping[str, Any] | None:
        return self.conditions.get("PodScheduled")

    def events_with(self, reason: str) -> list[Event]:
        return [e for e in self.events if e.reason == reason]


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str

    @property
    def ok(self) -> bool:
        return self.verdict != MISS


def labelled_node(pod: PodState, labelled: Iterable[str], label: str) -> Verdict:
    labelled = sorted(labelled)
    if pod.node is None:
        failed = pod.events_with("FailedScheduling")
        why = f": {failed[-1].message}" if failed else " and has no FailedScheduling event"
        return Verdict(MISS, f"not bound{why}")
    if pod.node in labelled:
        return Verdict(PASS, f"bound to {pod.node}, which carries {label}")
    return Verdict(MISS, f"bound to {pod.node}, which lacks {label} (labelled: {', '.join(labelled) or 'none'})")


def water_fill(before: Mapping[str, int], count: int) -> list[int]:
    """Pod counts per node (sorted) after placing `count` pods one by one, each on a least-loaded node.

    The multiset is the same whichever of the tied nodes each pod takes, so it can be compared with
    what the cluster shows without knowing the order of the decisions.
    """
    counts = sorted(before.values())
    for _ in range(count):
        counts[0] += 1
        counts.sort()
    return counts


def spread(before: Mapping[str, int], placed: Mapping[str, str | None], eligible: Iterable[str]) -> Verdict:
    """`before`: pods on each eligible node before the batch; `placed`: pod -> node (None = not bound).

    Least-loaded places each pod on a node with the fewest pods, so the batch fills the emptiest
    eligible nodes first; once they are level, counts stay within one of each other (max - min <= 1).
    """
    eligible = sorted(eligible)
    if not eligible:
        return Verdict(MISS, "no schedulable worker passes the scheduler's filters for a plain pod")
    unbound = sorted(p for p, n in placed.items() if n is None)
    if unbound:
        return Verdict(MISS, f"{len(unbound)} of {len(placed)} pods not bound: {', '.join(unbound[:5])}")
    stray = sorted(f"{p}->{n}" for p, n in placed.items() if n not in eligible)
    if stray:
        return Verdict(MISS, f"bound outside the eligible workers ({', '.join(eligible)}): {', '.join(stray)}")
    new = {n: sum(1 for node in placed.values() if node == n) for n in eligible}
    after = {n: before.get(n, 0) + new[n] for n in eligible}
    shown = ", ".join(f"{n} {before.get(n, 0)}+{new[n]}" for n in eligible)
    gap = max(after.values()) - min(after.values())
    expected = water_fill({n: before.get(n, 0) for n in eligible}, len(placed))
    if sorted(after.values()) != expected:
        return Verdict(MISS, f"not least-loaded: pods per node (before+new): {shown}; expected counts {expected}")
    return Verdict(PASS, f"pods per node (before+new): {shown}; max-min {gap}")


def unschedulable(pod: PodState, num_nodes: int, label_key: str) -> Verdict:
    if pod.node is not None:
        return Verdict(MISS, f"bound to {pod.node} although no node carries the high-speed label")
    failed = pod.events_with("FailedScheduling")
    if not failed:
        return Verdict(MISS, "Pending but no FailedScheduling event was recorded")
    message = failed[-1].message
    match = FIT_ERROR.match(message)
    if match is None:
        return Verdict(MISS, f"FailedScheduling is not in the '0/N nodes are available: ...' form: {message}")
    if int(match.group(1)) != num_nodes:
        return Verdict(MISS, f"FailedScheduling counts {match.group(1)} nodes, the cluster has {num_nodes}: {message}")
    if label_key not in message:
        return Verdict(MISS, f"FailedScheduling does not name the missing label {label_key}: {message}")
    cond = pod.scheduled_condition
    if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
        have = "none" if cond is None else f"{cond.get('status')}/{cond.get('reason')}"
        return Verdict(MISS, f"PodScheduled condition is {have}, expected False/Unschedulable; event: {message}")
    return Verdict(PASS, f"Pending, PodScheduled=False Unschedulable; {message}")


def ignored(pod: PodState, seconds: float) -> Verdict:
    if pod.node is not None:
        return Verdict(MISS, f"bound to {pod.node}: some scheduler serves this name")
    if pod.events:
        return Verdict(MISS, f"has events although no scheduler serves it: {pod.events[-1]}")
    if pod.scheduled_condition is not None:
        return Verdict(MISS, f"has a PodScheduled condition ({pod.scheduled_condition.get('reason')})")
    return Verdict(PASS, f"Pending with no events after {seconds:.0f} s")


def bound_after_restart(at_zero: PodState, after: PodState, pending_s: float, bind_s: float | None,
                        replicas: int) -> Verdict:
    if at_zero.node is not None:
        return Verdict(MISS, f"bound to {at_zero.node} while the scheduler was scaled to 0: another instance runs")
    if at_zero.events:
        return Verdict(MISS, f"reported on while the scheduler was scaled to 0 (another instance runs): {at_zero.events[-1]}")
    if after.node is None:
        return Verdict(MISS, f"still Pending after scaling back to {replicas}")
    return Verdict(PASS, f"Pending {pending_s:.1f} s at 0 replicas; bound to {after.node} "
                         f"{bind_s:.1f} s after scaling back to {replicas}")


def one_per_node(states: list[PodState], eligible: Iterable[str]) -> Verdict:
    """Pods with a required anti-affinity against each other per node: exactly one on each eligible node,
    and every other pod Pending with kube-scheduler's anti-affinity reason in its FailedScheduling event."""
    eligible = sorted(eligible)
    if not eligible:
        return Verdict(MISS, "no node passes the scheduler's filters for one pod of the set")
    per_node = Counter(s.node for s in states if s.node)
    shared = sorted(f"{n} x{c}" for n, c in per_node.items() if c > 1)
    if shared:
        return Verdict(MISS, f"nodes holding more than one: {', '.join(shared)} (the anti-affinity was not honoured)")
    stray = sorted(n for n in per_node if n not in eligible)
    if stray:
        return Verdict(MISS, f"bound outside the eligible nodes ({', '.join(eligible)}): {', '.join(stray)}")
    pending = [s for s in states if s.node is None]
    empty = [n for n in eligible if n not in per_node]
    if empty:
        return Verdict(MISS, f"no pod on {', '.join(empty)}, eligible; {len(pending)} Pending{_last_failure(pending)}")
    for pod in pending:
        failed = pod.events_with("FailedScheduling")
        if not failed:
            return Verdict(MISS, f"{pod.name} Pending with no FailedScheduling event")
        if ANTI_AFFINITY_REASON not in failed[-1].message:
            return Verdict(MISS, f"{pod.name}: FailedScheduling does not say {ANTI_AFFINITY_REASON!r}: "
                                 f"{failed[-1].message}")
    return Verdict(PASS, f"one each on {', '.join(eligible)}; {', '.join(p.name for p in pending) or 'none'} "
                         f"Pending{_last_failure(pending)}")


def even_spread(states: list[PodState], eligible: Iterable[str], max_skew: int = 1) -> Verdict:
    """Pods with a DoNotSchedule topology spread over nodes: every pod bound to an eligible node, the counts
    per eligible node differing by at most max_skew."""
    eligible = sorted(eligible)
    if not eligible:
        return Verdict(MISS, "no node passes the scheduler's filters for one pod of the set")
    pending = [s for s in states if s.node is None]
    if pending:
        names = ", ".join(p.name for p in pending[:5])
        return Verdict(MISS, f"{len(pending)} of {len(states)} pods not bound ({names}){_last_failure(pending)}")
    stray = sorted(f"{s.name}->{s.node}" for s in states if s.node not in eligible)
    if stray:
        return Verdict(MISS, f"bound outside the eligible nodes ({', '.join(eligible)}): {', '.join(stray)}")
    per_node = Counter(s.node for s in states)
    shown = ", ".join(f"{n} {per_node[n]}" for n in eligible)
    gap = max(per_node[n] for n in eligible) - min(per_node[n] for n in eligible)
    if gap > max_skew:
        return Verdict(MISS, f"pods per node: {shown}; max-min {gap} > maxSkew {max_skew}")
    return Verdict(PASS, f"pods per node: {shown}; max-min {gap} (maxSkew {max_skew})")


def _last_failure(pending: list[PodState]) -> str:
    """': <the last FailedScheduling message>' of the first pending pod that has one, else ''."""
    for pod in pending:
        failed = pod.events_with("FailedScheduling")
        if failed:
            return f": {failed[-1].message}"
    return ""


def preempted(fillers: Mapping[str, str], after: Iterable[PodState], pod: PodState) -> Verdict:
    """A high-priority pod on a cluster whose workers low-priority ``fillers`` (name -> node) filled: exactly
    one filler preempted (gone, with a Preempted event), and the pod bound to that filler's node."""
    gone = [s for s in after if s.node is None]
    if pod.node is None:
        failed = pod.events_with("FailedScheduling")
        detail = f": {failed[-1].message}" if failed else ""
        return Verdict(MISS, f"not bound; {len(gone)} low-priority pod(s) preempted{detail}")
    if len(gone) != 1:
        return Verdict(MISS, f"bound to {pod.node} after {len(gone)} low-priority pods went (want exactly 1)")
    victim = gone[0]
    if fillers[victim.name] != pod.node:
        return Verdict(MISS, f"bound to {pod.node}, but the preempted {victim.name} was on {fillers[victim.name]}")
    events = victim.events_with("Preempted")
    if not events:
        return Verdict(MISS, f"{victim.name} was deleted without a Preempted event")
    return Verdict(PASS, f"bound to {pod.node} after preempting {victim.name} ({events[-1].message})")
