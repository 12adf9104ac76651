"""TaintToleration: NoSchedule and NoExecute taints the pod does not tolerate rule a node out; untolerated
PreferNoSchedule taints lower its score (fewest such taints scores 100).

The reason is kube-scheduler 1.36's, "node(s) had untolerated taint(s)": it no longer names the taint
(kubernetes/kubernetes#134740, backported to 1.34: a taint's value can be sensitive, and the message goes
into events anyone reading the pod sees).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.framework import (
    Args,
    ClusterEvent,
    ClusterView,
    Code,
    Plugin,
    Status,
    default_normalize,
    same_state,
)
from scheduler.model import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    NodeInfo,
    PodInfo,
    Toleration,
    is_tolerated,
)

NAME = "TaintToleration"


REASON = "node(s) had untolerated taint(s)"
_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> tuple[Toleration, ...] | None:
    """None (nothing to check) when no node has a taint."""
    return pod.tolerations if cluster.traits.tainted else None


def filter_node(tolerations: tuple[Toleration, ...], node: NodeInfo) -> Status | None:
    for taint in node.taints:
        if (taint.effect == NO_SCHEDULE or taint.effect == NO_EXECUTE) and not is_tolerated(tolerations, taint):
            return _REJECT
    return None


def filter_batch(tolerations: tuple[Toleration, ...], nodes: list[NodeInfo]) -> list[Status | None] | None:
    if not [node for node in nodes if node.taints]:
        return None  # no taints on these nodes: nothing to tolerate
    return [filter_node(tolerations, node) if node.taints else None for node in nodes]


@dataclass(frozen=True, slots=True)
class _TaintScoring:
    tolerations: tuple[Toleration, ...]  # those that can match PreferNoSchedule taints
    any_tainted: bool  # False: no node has a taint, so every raw score is 0


def pre_score(pod: PodInfo, args: Args, cluster: ClusterView, feasible: Sequence[NodeInfo]) -> _TaintScoring:
    # An empty effect matches every effect.
    return _TaintScoring(tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)),
                    cluster.traits.tainted > 0)


def score_node(state: _TaintScoring, node: NodeInfo) -> int:
    """Raw score: how many PreferNoSchedule taints the pod does not tolerate (normalised reversed)."""
    return sum(1 for taint in node.taints
               if taint.effect == PREFER_NO_SCHEDULE and not is_tolerated(state.tolerations, taint))


def score_batch(state: _TaintScoring, nodes: list[NodeInfo]) -> list[int]:
    if not state.any_tainted:
        return [0] * len(nodes)
    return [score_node(state, node) if node.taints else 0 for node in nodes]


def normalize(scores: list[int], args: Args) -> None:
    default_normalize(scores, reverse=True)


# A taint removed, a node added, or the pod given a toleration.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_TAINTS_CHANGED
              | ClusterEvent.POD_TOLERATIONS_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, pre_score=pre_score,
                score_node=score_node, normalize=normalize, filter_batch=filter_batch,
                score_batch=score_batch, requeue_on=REQUEUE_ON, reads_cluster=True,
                replace_node=same_state)
