"""Verdicts: does what the cluster shows match what a scenario expects? Pure functions of observations.

Placement is judged by the binding (spec.nodeName), never by the scheduler's logs. Each function returns
a `Verdict` whose `reason` is the line a person reads in the table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PASS, MISS, SKIP = "pass", "miss", "skipped"
FIT_ERROR = re.compile(r"^0/(\d+) nodes are available")


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


def all_bound(states: Sequence[PodState]) -> Verdict | None:
    """None when every pod is bound, else the miss naming the Pending ones."""
    pending = [s for s in states if s.node is None]
    if not pending:
        return None
    names = ", ".join(p.name for p in pending[:5])
    why = _last_failure(pending) or " and no FailedScheduling event"
    return Verdict(MISS, f"{len(pending)} of {len(states)} pods not bound ({names}){why}")


def pending(states: Sequence[PodState], count: int | None, reason: str | None, num_nodes: int) -> Verdict:
    """`count` pods (None: all) Pending, each with a FailedScheduling event in kube-scheduler's
    "0/N nodes are available: ..." form counting the cluster's nodes and containing `reason`, and the
    condition PodScheduled=False reason Unschedulable."""
    waiting = [s for s in states if s.node is None]
    want = len(states) if count is None else count
    if len(waiting) != want:
        bound = ", ".join(f"{s.name}->{s.node}" for s in states if s.node)
        return Verdict(MISS, f"{len(waiting)} of {len(states)} pods Pending, expected {want} (bound: {bound or 'none'})"
                             f"{_last_failure(waiting)}")
    for pod in waiting:
        failed = pod.events_with("FailedScheduling")
        if not failed:
            return Verdict(MISS, f"{pod.name} Pending but no FailedScheduling event was recorded")
        message = failed[-1].message
        match = FIT_ERROR.match(message)
        if match is None:
            return Verdict(MISS, f"{pod.name}: FailedScheduling is not in the '0/N nodes are available: ...' form: "
                                 f"{message}")
        if int(match.group(1)) != num_nodes:
            return Verdict(MISS, f"{pod.name}: FailedScheduling counts {match.group(1)} nodes, the cluster has "
                                 f"{num_nodes}: {message}")
        if reason and reason not in message:
            return Verdict(MISS, f"{pod.name}: FailedScheduling does not say {reason!r}: {message}")
        cond = pod.scheduled_condition
        if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
            have = "none" if cond is None else f"{cond.get('status')}/{cond.get('reason')}"
            return Verdict(MISS, f"{pod.name}: PodScheduled condition is {have}, expected False/Unschedulable; "
                                 f"event: {message}")
    names = ", ".join(p.name for p in waiting)
    return Verdict(PASS, f"{names} Pending, PodScheduled=False Unschedulable{_last_failure(waiting)}")


def bound_to(states: Sequence[PodState], matching: Collection[str], described: str) -> Verdict:
    """Every bound pod is on one of the `matching` nodes (`described` says which those are)."""
    bound = [s for s in states if s.node]
    wrong = [s for s in bound if s.node not in matching]
    where = ", ".join(sorted(matching)) or "none"
    if wrong:
        return Verdict(MISS, f"{wrong[0].name} bound to {wrong[0].node}, not to {described} ({where})")
    nodes = ", ".join(sorted({s.node for s in bound if s.node}))
    return Verdict(PASS, f"bound to {nodes} ({described})")


def spread(states: Sequence[PodState], eligible: Iterable[str], within: int,
           before: Mapping[str, int] | None = None) -> Verdict:
    """The bound pods over the eligible nodes: none elsewhere, pods per node at most `within` apart.

    With `before` (the pods already on each eligible node) every pod counts, as a least-loaded spread sees
    them: pods placed one by one on a least-loaded node fill the emptiest nodes first, so when the batch
    cannot bring the counts within `within`, they must be exactly as level as it can make them.
    """
    eligible = sorted(eligible)
    if not eligible:
        return Verdict(MISS, "no node passes the scheduler's filters for one pod of the scenario")
    bound = [s for s in states if s.node]
    stray = sorted(f"{s.name}->{s.node}" for s in bound if s.node not in eligible)
    if stray:
        return Verdict(MISS, f"bound outside the eligible nodes ({', '.join(eligible)}): {', '.join(stray)}")
    new = Counter(s.node for s in bound)
    if before is None:
        after = {n: new[n] for n in eligible}
        shown = ", ".join(f"{n} {after[n]}" for n in eligible)
        label = "pods per node"
    else:
        after = {n: before.get(n, 0) + new[n] for n in eligible}
        shown = ", ".join(f"{n} {before.get(n, 0)}+{new[n]}" for n in eligible)
        label = "pods per node (before+new)"
    gap = max(after.values()) - min(after.values())
    if before is not None:
        level = water_fill({n: before.get(n, 0) for n in eligible}, len(bound))
        if level[-1] - level[0] > within and sorted(after.values()) != level:
            return Verdict(MISS, f"not as level as the batch could make them: {label}: {shown}; expected counts {level}")
        if level[-1] - level[0] > within:
            return Verdict(PASS, f"{label}: {shown}; as level as {len(bound)} pods make them")
    if gap > within:
        return Verdict(MISS, f"{label}: {shown}; max-min {gap} > {within}")
    return Verdict(PASS, f"{label}: {shown}; max-min {gap}")


def untouched(states: Sequence[PodState], seconds: float) -> Verdict:
    """Pending with no event and no PodScheduled condition: no scheduler acted on the pods."""
    for pod in states:
        if pod.node is not None:
            return Verdict(MISS, f"{pod.name} bound to {pod.node}: some scheduler serves this name")
        if pod.events:
            return Verdict(MISS, f"{pod.name} has events although no scheduler should act on it: {pod.events[-1]}")
        if pod.scheduled_condition is not None:
            return Verdict(MISS, f"{pod.name} has a PodScheduled condition ({pod.scheduled_condition.get('reason')})")
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


def _last_failure(pending: list[PodState]) -> str:
    """': <the last FailedScheduling message>' of the first pending pod that has one, else ''."""
    for pod in pending:
        failed = pod.events_with("FailedScheduling")
        if failed:
            return f": {failed[-1].message}"
    return ""


def preempted(fillers: Mapping[str, str], after: Iterable[PodState], pods: Sequence[PodState], count: int) -> Verdict:
    """Pods of a higher priority on a cluster the lower-priority ``fillers`` (name -> node) filled: exactly
    `count` fillers preempted (gone, each with a Preempted event) and the pods bound on the nodes they left."""
    gone = [s for s in after if s.node is None]
    waiting = [p for p in pods if p.node is None]
    if waiting:
        return Verdict(MISS, f"{waiting[0].name} not bound; {len(gone)} lower-priority pod(s) preempted"
                             f"{_last_failure(waiting)}")
    if len(gone) != count:
        return Verdict(MISS, f"bound to {', '.join(sorted({p.node for p in pods if p.node}))} after {len(gone)} "
                             f"lower-priority pods went (want exactly {count})")
    freed = {fillers[v.name] for v in gone}
    elsewhere = [p for p in pods if p.node not in freed]
    if elsewhere:
        victims = ", ".join(f"{v.name} on {fillers[v.name]}" for v in gone)
        return Verdict(MISS, f"{elsewhere[0].name} bound to {elsewhere[0].node}, but the preempted were {victims}")
    for victim in gone:
        if not victim.events_with("Preempted"):
            return Verdict(MISS, f"{victim.name} was deleted without a Preempted event")
    shown = ", ".join(f"{v.name} ({v.events_with('Preempted')[-1].message})" for v in gone)
    return Verdict(PASS, f"bound to {', '.join(sorted(freed))} after preempting {shown}")


def none_bound(states: Sequence[PodState], seconds: float) -> Verdict:
    """None of the pods bound (a scheduler may report on them: events are allowed)."""
    bound = [s for s in states if s.node is not None]
    if bound:
        return Verdict(MISS, f"{len(bound)} of {len(states)} pods bound within {seconds:g} s: "
                             + ", ".join(f"{s.name}->{s.node}" for s in bound[:5]))
    return Verdict(PASS, f"none of {len(states)} bound after {seconds:g} s{_last_failure(list(states))}")


def all_or_none(sets: Mapping[str, Sequence[PodState]], whole_sets: int | None) -> Verdict:
    """Each set of pods bound whole or not at all, and `whole_sets` of them (None: every set) bound whole."""
    def shown(members: Sequence[PodState]) -> str:
        nodes = Counter(s.node for s in members if s.node)
        return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(nodes.items()))

    for name, members in sets.items():
        bound = [s for s in members if s.node]
        if 0 < len(bound) < len(members):
            waiting = [s for s in members if not s.node]
            return Verdict(MISS, f"set {name}: {len(bound)} of {len(members)} bound ({shown(members)}), "
                                 f"{', '.join(s.name for s in waiting[:3])} not: all or none expected"
                                 f"{_last_failure(waiting)}")
    whole = [name for name, members in sets.items() if all(s.node for s in members)]
    want = len(sets) if whole_sets is None else whole_sets
    parts = [f"{name}: {len(members)} bound ({shown(members)})" if name in whole else f"{name}: none bound"
             for name, members in sets.items()]
    if len(whole) != want:
        unbound = [s for name, members in sets.items() if name not in whole for s in members]
        return Verdict(MISS, f"{len(whole)} of {len(sets)} set(s) bound whole, expected {want}: {'; '.join(parts)}"
                             f"{_last_failure(unbound)}")
    return Verdict(PASS, "; ".join(parts))
