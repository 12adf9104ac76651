"""InterPodAffinity: pods placed by the pods already in each topology domain (kube-scheduler's plugin of the
same name, pkg/scheduler/framework/plugins/interpodaffinity).

A topology domain is the set of nodes sharing one value of a term's ``topologyKey`` label; a node without
that label is in no domain of the term.

Filter, in this order (the first failure is the node's reason):
1. the incoming pod's required affinity: every term needs a node with its topology label, and a domain
   holding a pod that matches all the terms -- "node(s) didn't match pod affinity rules",
   UnschedulableAndUnresolvable. Exception: when no pod anywhere matches and the pod matches all its own
   terms, it is the first of its group and may go on any node with the topology labels.
2. the incoming pod's required anti-affinity: no term's domain on this node may hold a pod matching that
   term -- "node(s) didn't match pod anti-affinity rules", Unschedulable (evicting pods could fix it).
3. existing pods' required anti-affinity: no pod in a domain of this node may have a term the incoming pod
   matches -- "node(s) didn't satisfy existing pods anti-affinity rules", Unschedulable.

Score: for every existing pod, the incoming pod's preferred terms that pod matches (+weight for affinity,
-weight for anti-affinity), the existing pod's required affinity terms the incoming pod matches
(+hardPodAffinityWeight) and its preferred terms the incoming pod matches (+/-weight) add to the existing pod's
domain; a node scores the sum over its domains, and scores are rescaled min..max to 0..100. With
``ignorePreferredTermsOfExistingPods`` only the incoming pod's preferred terms count.

Cost: the filter's counts and the score's come from the snapshot's pod index (``scheduler.model.pod_index``),
which reads only the pods a term may select (for the score of existing pods' terms, the pods whose terms score
others) and keeps its answers current from one decision to the next, so a decision costs no read of every pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import Field

from scheduler.framework import MAX_NODE_SCORE, Args, ClusterEvent, ClusterView, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.pod_affinity import AffinityTerm
from scheduler.model.pod_index import TopologyCounts

NAME = "InterPodAffinity"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
_AFFINITY_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY_REASON,), NAME)
_ANTI_AFFINITY_REJECT = Status(Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,), NAME)
_EXISTING_REJECT = Status(Code.UNSCHEDULABLE, (EXISTING_ANTI_AFFINITY_REASON,), NAME)


class InterPodAffinityArgs(Args):
    hardPodAffinityWeight: int = Field(1, ge=0, le=100)
    ignorePreferredTermsOfExistingPods: bool = False


# The domains a node must not be in: (topology key, counts by domain, the verdict for a node in a counted
# domain), the incoming pod's anti-affinity terms first, then existing pods' anti-affinity (the order
# kube-scheduler checks them in).
_Blocked = tuple[tuple[str, TopologyCounts, Status], ...]


@dataclass(frozen=True, slots=True)
class _AffinityFilterState:
    affinity_terms: tuple[AffinityTerm, ...]
    affinity_counts: TopologyCounts  # domains holding a pod that matches all affinity terms
    first_of_group: bool  # no pod matches the affinity terms anywhere, and the pod matches them itself
    blocked: _Blocked


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> _AffinityFilterState | None:
    index = cluster.index
    existing = index.anti_affinity_against(pod.namespace, pod.labels)
    affinity = pod.pod_affinity
    required = affinity.required_affinity if affinity is not None else ()
    anti = affinity.required_anti_affinity if affinity is not None else ()
    if not (existing or required or anti):
        return None
    affinity_counts = index.matching_all(required) if required else {}
    first = (not affinity_counts and bool(required)
             and all(term.matches(pod.namespace, pod.labels, cluster.labels_of_namespace(pod.namespace))
                     for term in required))
    blocked = [(term.topology_key, counts, _ANTI_AFFINITY_REJECT)
               for term in anti if (counts := index.matching(term))]
    blocked += [(key, existing, _EXISTING_REJECT) for key in {key for key, _ in existing}]
    return _AffinityFilterState(required, affinity_counts, first, tuple(blocked))


def filter_node(state: _AffinityFilterState, node: NodeInfo) -> Status | None:
    labels = node.labels
    if state.affinity_terms and not _satisfies_affinity(state, labels):
        return _AFFINITY_REJECT
    for key, counts, status in state.blocked:
        if (key, labels.get(key)) in counts:
            return status
    return None


def filter_batch(state: _AffinityFilterState, nodes: list[NodeInfo]) -> list[Status | None] | None:
    if state.affinity_terms:
        return [filter_node(state, node) for node in nodes]
    # One pass per blocking source instead of a call per node; earlier sources win, so they go last.
    verdicts: list[Status | None] = [None] * len(nodes)
    for key, counts, status in reversed(state.blocked):
        verdicts = [status if (key, node.labels.get(key)) in counts else verdict
                    for node, verdict in zip(nodes, verdicts, strict=True)]
    return verdicts


def _satisfies_affinity(state: _AffinityFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in state.affinity_terms:
        value = labels.get(term.topology_key)
        if value is None:
            return False  # every topology label must exist on the node, first of its group or not
        if (term.topology_key, value) not in state.affinity_counts:
            pods_exist = False
    return pods_exist or state.first_of_group


# -- score ----------------------------------------------------------------------------------------

TopologyScores = dict[str, dict[str, int]]  # topology key -> value -> score


def pre_score(pod: PodInfo, args: InterPodAffinityArgs, cluster: ClusterView,
              feasible: Sequence[NodeInfo]) -> TopologyScores | None:
    if not feasible:
        return None  # nothing to score (kube-scheduler's PreScore skips too)
    affinity = pod.pod_affinity
    own_terms = affinity is not None and affinity.has_preferred
    if args.ignorePreferredTermsOfExistingPods and not own_terms:
        return None
    index = cluster.index
    scores: TopologyScores = {}
    if own_terms:  # each pod a preferred term matches adds (or takes) the term's weight in its domain
        assert affinity is not None
        for terms, sign in ((affinity.preferred_affinity, 1), (affinity.preferred_anti_affinity, -1)):
            for weighted in terms:
                _add_counts(scores, index.matching(weighted.term), sign * weighted.weight)
    if not args.ignorePreferredTermsOfExistingPods:  # existing pods' terms the incoming pod matches
        _add_counts(scores, index.scores_from_others(pod.namespace, pod.labels, args.hardPodAffinityWeight), 1)
    return scores or None


def _add_counts(scores: TopologyScores, counts: TopologyCounts, factor: int) -> None:
    for (topology_key, value), count in counts.items():
        by_value = scores.setdefault(topology_key, {})
        by_value[value] = by_value.get(value, 0) + factor * count


def score_node(scores: TopologyScores, node: NodeInfo) -> int:
    """Raw score: the sum of the node's domains' scores (may be negative)."""
    labels = node.labels
    total = 0
    for key, by_value in scores.items():
        value = labels.get(key)
        if value is not None:
            total += by_value.get(value, 0)
    return total


def normalize(scores: list[int], args: Args) -> None:
    """min..max to 0..100, truncated as kube-scheduler's float arithmetic does (all equal: all 0)."""
    if not scores:
        return
    low, high = min(scores), max(scores)
    span = high - low
    scores[:] = [int(MAX_NODE_SCORE * ((s - low) / span)) if span else 0 for s in scores]


# A pod added or its labels changed (it may be the match an affinity term waits for), a pod deleted (it may
# have been what anti-affinity objected to), a node added or relabelled (topology domains), or the pod itself
# relabelled (what existing pods' anti-affinity terms see).
REQUEUE_ON = (ClusterEvent.ASSIGNED_POD_ADDED | ClusterEvent.ASSIGNED_POD_LABELS_CHANGED
              | ClusterEvent.ASSIGNED_POD_DELETED | ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED
              | ClusterEvent.POD_LABELS_CHANGED)

PLUGIN = Plugin(NAME, args=InterPodAffinityArgs, pre_filter=pre_filter, filter_node=filter_node,
                pre_score=pre_score, score_node=score_node, normalize=normalize,
                filter_batch=filter_batch,
                requeue_on=REQUEUE_ON, reads_cluster=True)
