"""Preemption: when no node fits a pod, find the node where removing lower-priority pods makes room
(kube-scheduler's DefaultPreemption PostFilter, pkg/scheduler/framework/preemption/preemption.go and
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go). Pure: no I/O; the scheduling
cycle acts on the answer (deletes the victims, nominates the node).

1. Eligibility: ``spec.preemptionPolicy: Never`` never preempts; a pod already nominated to a node where a
   lower-priority pod is still terminating after a preemption waits for it (unless its nominated node is now
   ruled out for good).
2. Candidates: only nodes whose filter verdict was Unschedulable (resolvable by removing pods), not
   UnschedulableAndUnresolvable. They are dry-run from a random offset until enough candidates are found:
   DefaultPreemptionArgs' ``max(n * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``,
   capped at n, stopping early only once one candidate violates no PodDisruptionBudget.
3. Victims per node: remove every pod of lower priority; if the pod still does not fit, the node is no
   candidate. Otherwise add them back, most important first (higher priority, then longer running),
   PDB-violating ones before the others, keeping each that still lets the pod fit: the rest are the
   victims.
4. The candidate: fewest PDB violations, then the lowest highest-victim priority, the smallest sum of
   victim priorities, the fewest victims, the latest start among the highest-priority victims, then the
   first found.

Fitting is judged with the profile's filters and the pods nominated to the node with at least the pod's
priority. PreFilter runs once per preemption; each what-if node's verdict derives from that state
(``framework.WhatIfJudge``): PodTopologySpread's domain counts and InterPodAffinity's pod index see the
removed pods gone, as kube-scheduler's PreFilterExtensions RemovePod makes them, so evicting the pod an
anti-affinity term objects to is what makes the node fit.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.plugin import Code, Status
from scheduler.framework.profile import Nominated, Profile, WhatIfJudge
from scheduler.framework.result import ScheduleResult, fit_error_message
from scheduler.framework.signatures import PreemptionArgs
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.labels import LabelSelector, parse_label_selector
from scheduler.model.parsing import PodSpecError
from scheduler.model.pod import PREEMPT_NEVER

__all__ = ["Candidate", "Outcome", "PodDisruptionBudget", "more_important", "pick_candidate", "preempt",
           "select_victims"]

NO_VICTIMS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("No preemption victims found for incoming pod",))
NOT_HELPFUL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Preemption is not helpful for scheduling",))
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What preemption reads of a policy/v1 PodDisruptionBudget: the disruption controller's
    status.disruptionsAllowed and status.disruptedPods (pods whose eviction the API server has granted and
    the controller not yet seen go)."""

    namespace: str
    name: str
    selector: LabelSelector | None  # None: absent or unreadable, matches nothing
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> PodDisruptionBudget:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        try:
            selector = parse_label_selector(spec.get("selector"), "spec.selector")
        except PodSpecError:
            selector = None  # kube-scheduler: an invalid selector matches no pod
        allowed = status.get("disruptionsAllowed")
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            selector=selector,
            disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
            disrupted_pods=frozenset(status.get("disruptedPods") or ()),
        )

    def covers(self, pod: PodInfo) -> bool:
        # kube-scheduler: a nil or empty selector matches nothing here (unlike the eviction API).
        selector = self.selector
        return (pod.namespace == self.namespace and selector is not None and not selector.everything
                and selector.matches(pod.labels))


@dataclass(slots=True)
class Candidate:
    """A node where preemption makes room: its victims, most important first."""

    node: str
    victims: list[PodInfo]
    pdb_violations: int = 0


@dataclass(slots=True)
class Outcome:
    """What preemption came to. ``node``: the node to nominate (its ``victims`` to delete), or None with
    ``message``, the tail of the FailedScheduling message ("preemption: ..."). ``clear_nomination``: the
    pod's nominatedNodeName no longer holds (kube-scheduler clears it when no candidate is found)."""

    node: str | None = None
    victims: list[PodInfo] = field(default_factory=list)
    message: str = ""
    clear_nomination: bool = False


def preempt(profile: Profile, args: PreemptionArgs, pod: PodInfo, result: ScheduleResult,
            nodes: Sequence[NodeInfo], cluster: ClusterView, pdbs: Collection[PodDisruptionBudget],
            nominated: Nominated, rng: random.Random) -> Outcome:
    """Preemption for ``pod`` after ``result`` found no node (its ``failures`` hold every node's verdict).
    ``nominated``: the pods nominated per node that count for this pod."""
    by_name = {n.name: n for n in nodes}
    reason = _not_eligible(pod, result.failures, by_name)
    if reason:
        return Outcome(message=f"preemption: {reason}")
    potential = [n for n in nodes if (s := result.failures.get(n.name)) is not None and s.code == Code.UNSCHEDULABLE]
    candidates: list[Candidate] = []
    statuses: dict[str, Status] = {}
    if potential:
        candidates, statuses = _dry_run(profile, args, pod, potential, cluster, pdbs, nominated, rng)
    if not candidates:
        absent = {n.name: NOT_HELPFUL for n in nodes if n.name not in statuses}
        message = fit_error_message(len(nodes), {**statuses, **absent})
        return Outcome(message=f"preemption: {message}", clear_nomination=True)
    best = pick_candidate(candidates)
    return Outcome(node=best.node, victims=best.victims)


def _not_eligible(pod: PodInfo, failures: Mapping[str, Status], nodes: Mapping[str, NodeInfo]) -> str:
    """Why the pod may not preempt ("" when it may): kube-scheduler's PodEligibleToPreemptOthers."""
    if pod.preemption_policy == PREEMPT_NEVER:
        return NEVER
    nominated = pod.nominated_node_name
    if not nominated:
        return ""
    status = failures.get(nominated)
    if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return ""  # ruled out for good: look elsewhere
    node = nodes.get(nominated)
    if node is not None and any(p.priority < pod.priority and p.terminating_by_preemption
                                for p in node.pods.values()):
        return TERMINATING
    return ""


def _dry_run(profile: Profile, args: PreemptionArgs, pod: PodInfo, potential: list[NodeInfo],
             cluster: ClusterView, pdbs: Collection[PodDisruptionBudget], nominated: Nominated,
             rng: random.Random) -> tuple[list[Candidate], dict[str, Status]]:
    """Candidates from the potential nodes, visited from a random offset (kube-scheduler's
    DryRunPreemption): those violating no PDB first. Also each visited non-candidate's status."""
    wanted = args.num_candidates(len(potential))
    offset = rng.randrange(len(potential))
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    judge = profile.what_if_judge(pod, cluster)
    for i in range(len(potential)):
        node = potential[(offset + i) % len(potential)]
        found = select_victims(profile, pod, node, cluster, pdbs, nominated.get(node.name, ()), judge)
        if isinstance(found, Status):
            statuses[node.name] = found
            continue
        (violating if found.pdb_violations else clean).append(found)
        if clean and len(clean) + len(violating) >= wanted:
            break
    return (clean[:wanted] + violating[:wanted]), statuses


def more_important(pod: PodInfo) -> tuple[int, str]:
    """Sort key, most important first (kube-scheduler's MoreImportantPod): higher priority, then the earlier
    start. A pod not started yet counts as starting now, after every started one."""
    return -pod.priority, pod.start_time or _NOT_STARTED


_PRIORITY_SHIFT = 2**31
_NOT_STARTED = "\uffff"  # sorts after every RFC 3339 time


def select_victims(profile: Profile, pod: PodInfo, node: NodeInfo, cluster: ClusterView,
                   pdbs: Collection[PodDisruptionBudget], nominated: Sequence[PodInfo] = (),
                   judge: WhatIfJudge | None = None) -> Candidate | Status:
    """The fewest, least important pods to remove from ``node`` for ``pod`` to fit (kube-scheduler's
    SelectVictimsOnNode), or the Status saying why removing pods does not help there. ``judge``: the
    pod's what-if verdicts over ``cluster``, when one serves every candidate node."""
    potential = [p for p in node.pods.values() if p.priority < pod.priority]
    if not potential:
        return NO_VICTIMS
    judge = judge if judge is not None else profile.what_if_judge(pod, cluster)
    what_if = node.clone()
    for victim in potential:
        what_if.remove_pod(victim)
    status = judge.verdict(what_if, nominated)
    if status is not None:
        return status
    potential.sort(key=more_important)
    violating, clean = _split_by_pdb(potential, pdbs)
    victims: list[PodInfo] = []
    violations = 0
    for group in (violating, clean):
        for victim in group:  # reprieve the most important first
            what_if.add_pod(victim)
            if judge.verdict(what_if, nominated) is not None:
                what_if.remove_pod(victim)
                victims.append(victim)
                violations += group is violating
    if not victims:  # it fits without evicting anyone: the cluster changed under the cycle (upstream: no candidate)
        return NO_VICTIMS
    if violating and clean:
        victims.sort(key=more_important)
    return Candidate(node.name, victims, violations)


def _split_by_pdb(pods: list[PodInfo], pdbs: Collection[PodDisruptionBudget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """(pods whose eviction would exceed a budget, the others), each in the given order (kube-scheduler's
    filterPodsWithPDBViolation: each matching budget's disruptionsAllowed is spent pod by pod; a pod
    already in its disruptedPods spends nothing)."""
    allowed = {id(pdb): pdb.disruptions_allowed for pdb in pdbs}
    violating, clean = [], []
    for pod in pods:
        violates = False
        if pod.labels:
            for pdb in pdbs:
                if not pdb.covers(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[id(pdb)] -= 1
                if allowed[id(pdb)] < 0:
                    violates = True
        (violating if violates else clean).append(pod)
    return violating, clean


def pick_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """The candidate kube-scheduler's pickOneNodeForPreemption chooses: each rule in turn keeps the best
    candidates, until one is left (then the first of those left)."""
    rules = (
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        # Each priority shifted by 2^31 to be >= 0, so fewer negative-priority victims weigh less (as upstream).
        lambda c: -sum(v.priority + _PRIORITY_SHIFT for v in c.victims),
        lambda c: -len(c.victims),
        _latest_start,
    )
    left = list(candidates)
    for rule in rules:
        if len(left) == 1:
            break
        best = max(rule(c) for c in left)
        left = [c for c in left if rule(c) == best]
    return left[0]


def _latest_start(c: Candidate) -> str:
    """The earliest start among the highest-priority victims: the later, the better (kube-scheduler's
    GetEarliestPodStartTime; a pod not started yet counts as starting now)."""
    top = c.victims[0].priority
    return min(v.start_time or _NOT_STARTED for v in c.victims if v.priority == top)
