"""PodTopologySpread: keep pods matching a selector evenly spread over topology domains (zones, hosts...),
as kube-scheduler's podtopologyspread plugin does for ``spec.topologySpreadConstraints``.

Domains are the values of a constraint's ``topologyKey`` among node labels. Only nodes carrying every
constraint's key count, and of those only nodes the constraint's policies admit: ``nodeAffinityPolicy:
Honor`` (default) keeps the nodes matching the pod's nodeSelector and required node affinity,
``nodeTaintsPolicy: Honor`` (default Ignore) the nodes whose NoSchedule/NoExecute taints the pod tolerates.
Pods counted in a domain: those on its nodes in the pod's namespace, not terminating, matching the
selector (with ``matchLabelKeys`` merged; an empty selector counts none, as upstream).

Filter (``whenUnsatisfiable: DoNotSchedule``): a node lacking a key is rejected ("... (missing required
label)", unresolvable); otherwise the node's domain count, plus 1 if the pod matches its own selector,
minus the smallest domain count (0 while there are fewer domains than ``minDomains``) must not exceed
``maxSkew``. All counting is done once per cycle in pre_filter; pods without constraints skip the plugin.

Score (``ScheduleAnyway``): per scored node, the sum over constraints of count x log(domains + 2) +
(maxSkew - 1), rounded; normalised so fewer matching pods score higher (100 x (max + min - s) / max), and
scored nodes lacking a key score 0. Hostname constraints count the node's own pods.

Default constraints for pods stating none (kube-scheduler's defaultingType System, or List with
defaultConstraints) take their selector from the Services, ReplicaSets and StatefulSets selecting the pod;
this scheduler watches none of those, so it has no default constraints and refuses args asking for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import field_validator

from scheduler.framework import MAX_NODE_SCORE, Args, ClusterEvent, ClusterView, Code, Plugin, Status
from scheduler.model import NO_EXECUTE, NO_SCHEDULE, NodeInfo, PodInfo, is_tolerated
from scheduler.model.topology_spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, SpreadConstraint

NAME = "PodTopologySpread"
HOSTNAME = "kubernetes.io/hostname"
REASON = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = f"{REASON} (missing required label)"
_SKEW = Status(Code.UNSCHEDULABLE, (REASON,), NAME)
_MISSING = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MISSING_LABEL,), NAME)
_IGNORED = -1  # raw score of a scored node lacking a topology key: normalize() gives it 0


class PodTopologySpreadArgs(Args):
    defaultingType: Literal["List", "System"] = "List"
    defaultConstraints: tuple[dict, ...] = ()

    @field_validator("defaultingType")
    @classmethod
    def _no_system(cls, value: str) -> str:
        if value == "System":
            raise ValueError("System defaults are not implemented: they need the selectors of the Services, "
                             "ReplicaSets and StatefulSets that select a pod, which this scheduler does not "
                             "watch; use defaultingType: List")
        return value

    @field_validator("defaultConstraints")
    @classmethod
    def _no_defaults(cls, value: tuple[dict, ...]) -> tuple[dict, ...]:
        if value:
            raise ValueError("default constraints are not implemented: kube-scheduler takes their selector "
                             "from the Services, ReplicaSets and StatefulSets selecting the pod, which this "
                             "scheduler does not watch; remove them and state topologySpreadConstraints in "
                             "the pods")
        return value


def _admits(pod: PodInfo, c: SpreadConstraint, node: NodeInfo) -> bool:
    """The constraint's node inclusion policies (matchNodeInclusionPolicies)."""
    if c.honor_node_affinity:
        labels = node.labels
        for key, value in pod.node_selector.items():
            if labels.get(key) != value:
                return False
        if pod.required_node_affinity is not None and not pod.required_node_affinity.matches(node.name, labels):
            return False
    if c.honor_node_taints:
        for taint in node.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not is_tolerated(pod.tolerations, taint):
                return False
    return True


def _checks_nodes(pod: PodInfo, c: SpreadConstraint) -> bool:
    """Whether _admits can turn a node away for this pod and constraint (else it is not called)."""
    affinity = c.honor_node_affinity and (pod.node_selector or pod.required_node_affinity is not None)
    return bool(affinity or c.honor_node_taints)


PodCounter = Callable[[NodeInfo], int]  # matching pods on one node


def _counter(c: SpreadConstraint, namespace: str) -> PodCounter:
    """countPodsMatchSelector for one constraint: a node's non-terminating pods in the namespace that match
    (an empty selector counts none, as upstream). This runs for every pod on every node in a cycle, so a
    selector of plain labels (matchLabels) is compared inline rather than through LabelSelector.matches."""
    selector = c.selector
    if selector.everything:
        return lambda node: 0
    match = selector.matches
    if all(r.operator == "In" and len(r.values) == 1 for r in selector.requirements) and not selector.nothing:
        pairs = tuple((r.key, next(iter(r.values))) for r in selector.requirements)
        if len(pairs) == 1:
            ((key, value),) = pairs
            match = lambda labels: labels.get(key) == value
        else:
            match = lambda labels: all(labels.get(k) == v for k, v in pairs)

    def count(node: NodeInfo) -> int:
        n = 0
        for p in node.pods.values():
            if p.namespace == namespace and p.deletion_timestamp is None and match(p.labels):
                n += 1
        return n

    return count


def _carries_keys(node: NodeInfo, constraints: Sequence[SpreadConstraint]) -> bool:
    labels = node.labels
    for c in constraints:
        if c.topology_key not in labels:
            return False
    return True


# filter --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _SpreadFilterState:
    constraints: tuple[SpreadConstraint, ...]
    counts: tuple[dict[str, int], ...]  # per constraint: domain -> matching pods
    minimums: tuple[int, ...]  # per constraint: the global minimum the skew is measured from
    self_match: tuple[int, ...]  # per constraint: 1 if the pod matches its own selector


def pre_filter(pod: PodInfo, args: PodTopologySpreadArgs, cluster: ClusterView) -> _SpreadFilterState | None:
    constraints = tuple(c for c in pod.topology_spread if c.when_unsatisfiable == DO_NOT_SCHEDULE)
    if not constraints:
        return None
    counts: tuple[dict[str, int], ...] = tuple({} for _ in constraints)
    plans = [(c, _counter(c, pod.namespace), _checks_nodes(pod, c), domains)
             for c, domains in zip(constraints, counts, strict=True)]
    for node in cluster.nodes:
        if not _carries_keys(node, constraints):
            continue
        for c, count, check, domains in plans:
            if not check or _admits(pod, c, node):
                value = node.labels[c.topology_key]
                domains[value] = domains.get(value, 0) + count(node)
    self_match = tuple(int(c.selector.matches(pod.labels)) for c in constraints)
    return _SpreadFilterState(constraints, counts, _minimums(constraints, counts), self_match)


def _minimums(constraints: Sequence[SpreadConstraint], counts: Sequence[dict[str, int]]) -> tuple[int, ...]:
    # Fewer domains than minDomains (never fewer than 1) measure the skew from 0.
    return tuple(min(domains.values()) if len(domains) >= c.min_domains else 0
                 for c, domains in zip(constraints, counts, strict=True))


def replace_node(s: _SpreadFilterState, pod: PodInfo, args: PodTopologySpreadArgs, old: NodeInfo,
                 new: NodeInfo) -> _SpreadFilterState:
    """The counts with ``new`` (the same node with pods added or removed) standing in for ``old``: its
    domain's count moves by the difference (upstream's AddPod/RemovePod, updateWithPod), no recount."""
    if not _carries_keys(new, s.constraints):
        return s
    counts = list(s.counts)
    for i, c in enumerate(s.constraints):
        if _checks_nodes(pod, c) and not _admits(pod, c, new):
            continue
        count = _counter(c, pod.namespace)
        delta = count(new) - count(old)
        if delta:
            value = new.labels[c.topology_key]
            counts[i] = {**counts[i], value: counts[i].get(value, 0) + delta}
    if counts == list(s.counts):
        return s
    return _SpreadFilterState(s.constraints, tuple(counts), _minimums(s.constraints, counts), s.self_match)


def filter_node(s: _SpreadFilterState, node: NodeInfo) -> Status | None:
    labels = node.labels
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return _MISSING
        if s.counts[i].get(value, 0) + s.self_match[i] - s.minimums[i] > c.max_skew:
            return _SKEW
    return None


# score ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _ScoreState:
    constraints: tuple[SpreadConstraint, ...]
    counters: tuple[PodCounter, ...]  # per constraint: matching pods on one node
    weights: tuple[float, ...]  # per constraint: log(domains among the scored nodes + 2)
    pair_counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (key, value) -> matching pods


def pre_score(pod: PodInfo, args: PodTopologySpreadArgs, cluster: ClusterView,
              feasible: Sequence[NodeInfo]) -> _ScoreState | None:
    constraints = tuple(c for c in pod.topology_spread if c.when_unsatisfiable == SCHEDULE_ANYWAY)
    if not constraints or not feasible:
        return None
    pair_counts: dict[tuple[str, str], int] = {}
    sizes = [0] * len(constraints)
    ignored = 0
    for node in feasible:
        if not _carries_keys(node, constraints):
            ignored += 1
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME:
                continue  # counted per node in score_node
            pair = (c.topology_key, node.labels[c.topology_key])
            if pair not in pair_counts:
                pair_counts[pair] = 0
                sizes[i] += 1
    weights = tuple(math.log((len(feasible) - ignored if c.topology_key == HOSTNAME else size) + 2)
                    for c, size in zip(constraints, sizes, strict=True))
    counters = tuple(_counter(c, pod.namespace) for c in constraints)
    if pair_counts:
        plans = [(c, count, _checks_nodes(pod, c)) for c, count in zip(constraints, counters, strict=True)]
        for node in cluster.nodes:
            if not _carries_keys(node, constraints):
                continue
            for c, count, check in plans:
                pair = (c.topology_key, node.labels[c.topology_key])
                if pair in pair_counts and (not check or _admits(pod, c, node)):
                    pair_counts[pair] += count(node)
    return _ScoreState(constraints, counters, weights, pair_counts)


def score_node(s: _ScoreState, node: NodeInfo) -> int:
    if not _carries_keys(node, s.constraints):
        return _IGNORED
    score = 0.0
    for c, counter, weight in zip(s.constraints, s.counters, s.weights, strict=True):
        if c.topology_key == HOSTNAME:
            count = counter(node)
        else:
            count = s.pair_counts.get((c.topology_key, node.labels[c.topology_key]), 0)
        score += count * weight + (c.max_skew - 1)
    return int(score + 0.5)  # Go's math.Round for a non-negative score


def normalize(scores: list[int], args: PodTopologySpreadArgs) -> None:
    counted = [s for s in scores if s != _IGNORED]
    if not counted:
        scores[:] = [0] * len(scores)
        return
    low, high = min(counted), max(counted)
    scores[:] = [0 if s == _IGNORED else MAX_NODE_SCORE if high == 0
                 else MAX_NODE_SCORE * (high + low - s) // high for s in scores]


# A matching pod placed, relabelled or gone changes the counts; a node added or relabelled changes the
# domains; a taint change matters to nodeTaintsPolicy: Honor; the pod's own labels change its selectors.
REQUEUE_ON = (ClusterEvent.ASSIGNED_POD_ADDED | ClusterEvent.ASSIGNED_POD_LABELS_CHANGED
              | ClusterEvent.ASSIGNED_POD_DELETED | ClusterEvent.NODE_ADDED
              | ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.NODE_TAINTS_CHANGED
              | ClusterEvent.POD_LABELS_CHANGED | ClusterEvent.POD_TOPOLOGY_SPREAD_CHANGED)

PLUGIN = Plugin(NAME, args=PodTopologySpreadArgs, pre_filter=pre_filter, filter_node=filter_node,
                pre_score=pre_score, score_node=score_node, normalize=normalize,
                requeue_on=REQUEUE_ON, reads_cluster=True, replace_node=replace_node)
