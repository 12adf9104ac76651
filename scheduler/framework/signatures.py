"""The call signature of each extension point, as a Protocol (kube-scheduler has one interface per point:
PreFilterPlugin, FilterPlugin, ScorePlugin, ReservePlugin...): the descriptor's functions first, then the methods
of a plugin's setup class (self excluded). ``contracts`` checks plugins against them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.handle import CycleState
from scheduler.framework.status import Status
from scheduler.model import NodeInfo, PodInfo

__all__ = [
    "SETUP_METHODS",
    "ClusterPreFilter",
    "ClusterPreScore",
    "Filter",
    "FilterBatch",
    "NodeMethod",
    "Normalize",
    "PostFilterMethod",
    "PostFilterNote",
    "PreEnqueueMethod",
    "PreFilter",
    "PreFilterNodes",
    "PreScore",
    "PreemptionArgs",
    "ReplaceNode",
    "Score",
    "ScoreBatch",
    "SortKeyMethod",
]


class PreFilter(Protocol):
    """Once per cycle: the per-pod state ``filter_node`` reads; None: nothing to check (every node passes);
    a Status: the pod is rejected on every node."""

    def __call__(self, pod: PodInfo, args: Any, /) -> Any: ...


class ClusterPreFilter(Protocol):
    """PreFilter of a plugin that ``reads_cluster``: also gets the cycle's snapshot."""

    def __call__(self, pod: PodInfo, args: Any, cluster: ClusterView, /) -> Any: ...


class Filter(Protocol):
    """Per node: None when the node passes, else a Status whose reasons never name the node."""

    def __call__(self, state: Any, node: NodeInfo, /) -> Status | None: ...


class FilterBatch(Protocol):
    """``Filter`` over many nodes: the verdicts aligned with ``nodes``, or None when every node passes."""

    def __call__(self, state: Any, nodes: list[NodeInfo], /) -> list[Status | None] | None: ...


class PreScore(Protocol):
    """Once per cycle: the per-pod state ``score_node`` reads; None: every node scores 0."""

    def __call__(self, pod: PodInfo, args: Any, /) -> Any: ...


class ClusterPreScore(Protocol):
    """PreScore of a plugin that ``reads_cluster``: also gets the snapshot and the nodes being scored."""

    def __call__(self, pod: PodInfo, args: Any, cluster: ClusterView, feasible: Sequence[NodeInfo], /) -> Any: ...


class Score(Protocol):
    """Per node: the raw score (an int; ``normalize`` or the plugin keeps it within 0..MAX_NODE_SCORE)."""

    def __call__(self, state: Any, node: NodeInfo, /) -> int: ...


class ScoreBatch(Protocol):
    """``Score`` over many nodes, aligned with ``nodes``."""

    def __call__(self, state: Any, nodes: list[NodeInfo], /) -> list[int]: ...


class Normalize(Protocol):
    """Rescale every feasible node's raw score in place to 0..MAX_NODE_SCORE."""

    def __call__(self, scores: list[int], args: Any, /) -> None: ...


class ReplaceNode(Protocol):
    """The pre_filter state with ``new`` (the same node with pods added or removed) standing in for ``old``
    (kube-scheduler's PreFilterExtensions AddPod/RemovePod)."""

    def __call__(self, state: Any, pod: PodInfo, args: Any, old: NodeInfo, new: NodeInfo, /) -> Any: ...


class PreFilterNodes(Protocol):
    """The only nodes worth filtering for a pre_filter state, or None for every node (kube-scheduler's
    PreFilterResult)."""

    def __call__(self, state: Any, /) -> frozenset[str] | None: ...


class PostFilterNote(Protocol):
    """A PostFilter's part of the FailedScheduling message for a pod no node fits, given the pod and the PreFilter
    rejection that ended the cycle (None when the filters ran), and whether the PostFilters after it still run."""

    def __call__(self, pod: PodInfo, pre_filter_rejection: Status | None, /) -> tuple[str, bool]: ...


class PreemptionArgs(Protocol):
    """What the framework's preemption (``scheduler.framework.preemption``) reads of a PostFilter plugin's
    args: how many candidate nodes to dry-run among ``num_nodes``."""

    def num_candidates(self, num_nodes: int, /) -> int: ...


# The setup class's points: one Protocol per method (self excluded), as kube-scheduler's ReservePlugin, ...
class PreEnqueueMethod(Protocol):
    """None (or SUCCESS) lets the pod into the active queue; another Status keeps it out, with its reason."""

    def __call__(self, pod: PodInfo, /) -> Status | None: ...


class SortKeyMethod(Protocol):
    """The pod's place in the active queue (lower first); ``enqueued_at``: when it entered the queue."""

    def __call__(self, pod: PodInfo, enqueued_at: float, /) -> Any: ...


class PostFilterMethod(Protocol):
    """No node fits ``pod`` (``failures``: node -> the filter's Status): None/SUCCESS ends the PostFilters,
    another Status adds its reasons to the FailedScheduling message."""

    def __call__(self, cycle: CycleState, pod: PodInfo, failures: Any, /) -> Status | None: ...


class NodeMethod(Protocol):
    """Reserve, Unreserve, Permit, PreBind, Bind or PostBind of ``pod`` on the chosen ``node``."""

    def __call__(self, cycle: CycleState, pod: PodInfo, node: str, /) -> Status | None: ...


SETUP_METHODS: dict[str, type] = {
    "pre_enqueue": PreEnqueueMethod,
    "sort_key": SortKeyMethod,
    "post_filter": PostFilterMethod,
    "reserve": NodeMethod,
    "unreserve": NodeMethod,
    "permit": NodeMethod,
    "pre_bind": NodeMethod,
    "bind": NodeMethod,
    "post_bind": NodeMethod,
}
