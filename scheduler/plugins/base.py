"""What every plugin is made of: a verdict type, a plugin descriptor, score normalisation helpers.

A plugin answers one question from a read-only snapshot, like a kube-scheduler framework plugin:
- Filter: may this pod go on this node? ``pre_filter(pod, args)`` runs once per scheduling cycle and
  returns the per-pod state the node check needs (kube-scheduler's PreFilter / CycleState), or ``None``
  when the plugin has nothing to check for this pod (every node passes, and the framework skips it).
  ``filter_node(state, node)`` then runs per node and returns ``None`` when the node passes or a
  ``Status`` with kube-scheduler's reason text when it does not.
- Score: how good is this node? ``pre_score(pod, args)`` -> state or ``None`` (every node scores 0),
  ``score_node(state, node)`` -> int, and optionally ``normalize(scores, args)`` to rescale the list in
  place to 0..100 once all feasible nodes are scored.

Splitting per-pod work from per-node work keeps the hot path cheap: the node loop does no parsing and,
on success, allocates nothing. ``Plugin.filter(pod, node, args)``, ``Plugin.score(pod, node, args)`` (raw)
and ``Plugin.score_nodes(pod, nodes, args)`` (normalised) wrap both halves for tests and for the
placement explainer.

Plugins that read the whole cluster (``reads_cluster``), such as PodTopologySpread counting pods per zone or
ImageLocality counting the nodes holding an image, get the cycle's nodes too: ``pre_filter(pod, args, nodes)``
with every node of the snapshot, and ``pre_score(pod, args, nodes, feasible)`` with every node and the
nodes being scored (kube-scheduler's PreFilter and PreScore reading its snapshot lister). The per-node halves
stay as they are: whatever the node loop needs from other nodes is computed once, in the pre step.

Requeue triggers: ``requeue_on`` names the cluster events (``scheduler.cluster_event``) that can undo the
plugin's rejection, such as a new node or a changed taint for TaintToleration; the scheduling queue retries a
pod no node fits only on an event one of its rejecting plugins declares.

Batch forms (optional, for speed): ``filter_batch(state, nodes)`` returns the verdicts aligned with
``nodes``, or ``None`` when every node passes; ``score_batch(state, nodes)`` returns the raw scores. They
must give exactly what ``filter_node`` / ``score_node`` give node by node (tests/scheduler checks this);
they exist because a Python call per node and plugin is most of a decision's cost at 1,000+ nodes, and a
comprehension that only reads attributes, or a quick "nothing to reject here" scan, is several times cheaper.
The framework uses them when present and falls back to the per-node functions otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from scheduler.cluster_event import ClusterEvent
from scheduler.model import NodeInfo, PodInfo

__all__ = [
    "MAX_NODE_SCORE",
    "SUCCESS",
    "Args",
    "Code",
    "NoArgs",
    "Plugin",
    "Status",
    "default_normalize",
    "min_max_normalize",
]

MAX_NODE_SCORE = 100


class Code(IntEnum):
    """Verdict codes, as kube-scheduler's framework names them."""

    SUCCESS = 0
    # The node does not fit now but could (e.g. after other pods leave): preemption might help.
    UNSCHEDULABLE = 2
    # Nothing about other pods would make this node fit (taints, selectors, names).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3


@dataclass(frozen=True, slots=True, eq=False)
class Status:
    """A filter verdict. ``reasons`` are counted per node in the FailedScheduling message, so they never
    name the node: "Insufficient cpu", "node(s) were unschedulable". Compared by identity (eq=False):
    the filter loop counts ``None`` verdicts with list.count, which would otherwise call a Python
    ``__eq__`` per failed node."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def reason(self) -> str:
        return ", ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS


SUCCESS = Status(Code.SUCCESS)


class Args(BaseModel):
    """Base of every plugin's pluginConfig args: unknown fields are errors. ``apiVersion``/``kind`` are
    accepted because kube-scheduler configs often carry them inside args (kind: NodeResourcesFitArgs)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    apiVersion: str | None = None
    kind: str | None = None


class NoArgs(Args):
    """For plugins that take no arguments."""


PreFn = Callable[[PodInfo, Any], Any]
FilterFn = Callable[[Any, NodeInfo], "Status | None"]
ScoreFn = Callable[[Any, NodeInfo], int]
NormalizeFn = Callable[[list[int], Any], None]
FilterBatchFn = Callable[[Any, "list[NodeInfo]"], "list[Status | None] | None"]
ScoreBatchFn = Callable[[Any, "list[NodeInfo]"], list[int]]


@dataclass(frozen=True, slots=True)
class Plugin:
    """One plugin: its name, args model, the function pairs it implements (None = not implemented), and for
    a filter the cluster events that can make a pod it rejected schedulable (kube-scheduler's
    EventsToRegister). A filter that declares none is retried on every event, as kube-scheduler treats a
    plugin without EnqueueExtensions."""

    name: str
    args: type[Args] = NoArgs
    pre_filter: PreFn | None = None
    filter_node: FilterFn | None = None
    pre_score: PreFn | None = None
    score_node: ScoreFn | None = None
    normalize: NormalizeFn | None = None
    default_weight: int = 1
    filter_batch: FilterBatchFn | None = None
    score_batch: ScoreBatchFn | None = None
    requeue_on: ClusterEvent = ClusterEvent.ANY
    reads_cluster: bool = False

    @property
    def filters(self) -> bool:
        return self.filter_node is not None

    @property
    def scores(self) -> bool:
        return self.score_node is not None

    def default_args(self) -> Args:
        return self.args()

    def run_pre_filter(self, pod: PodInfo, args: Args, nodes: Sequence[NodeInfo]) -> Any:
        """The pre_filter state for a cycle over ``nodes`` (the snapshot's nodes)."""
        assert self.pre_filter is not None, f"{self.name} does not filter"
        if self.reads_cluster:
            return self.pre_filter(pod, args, nodes)  # type: ignore[call-arg]
        return self.pre_filter(pod, args)

    def run_pre_score(self, pod: PodInfo, args: Args, nodes: Sequence[NodeInfo],
                      feasible: Sequence[NodeInfo]) -> Any:
        """The pre_score state for scoring ``feasible`` among the snapshot's ``nodes``."""
        assert self.pre_score is not None, f"{self.name} does not score"
        if self.reads_cluster:
            return self.pre_score(pod, args, nodes, feasible)  # type: ignore[call-arg]
        return self.pre_score(pod, args)

    def filter(self, pod: PodInfo, node: NodeInfo, args: Args | None = None,
               nodes: Sequence[NodeInfo] | None = None) -> Status:
        """Whole filter verdict for one pod on one node (both halves; for tests and explanations).
        ``nodes`` is the cluster the node belongs to (default: that node alone)."""
        assert self.pre_filter is not None and self.filter_node is not None, f"{self.name} does not filter"
        args = args if args is not None else self.default_args()
        state = self.run_pre_filter(pod, args, nodes if nodes is not None else (node,))
        if state is None:
            return SUCCESS
        return self.filter_node(state, node) or SUCCESS

    def score(self, pod: PodInfo, node: NodeInfo, args: Args | None = None,
              nodes: Sequence[NodeInfo] | None = None) -> int:
        """Raw (not normalised) score of one node, in the cluster ``nodes`` (default: that node alone)."""
        assert self.pre_score is not None and self.score_node is not None, f"{self.name} does not score"
        args = args if args is not None else self.default_args()
        state = self.run_pre_score(pod, args, nodes if nodes is not None else (node,), (node,))
        return 0 if state is None else self.score_node(state, node)

    def score_nodes(self, pod: PodInfo, nodes: list[NodeInfo], args: Args | None = None,
                    cluster: Sequence[NodeInfo] | None = None) -> list[int]:
        """Final 0..100 scores of several nodes (raw scores, then normalize if the plugin has one), in the
        cluster ``cluster`` (default: these nodes)."""
        assert self.pre_score is not None and self.score_node is not None, f"{self.name} does not score"
        args = args if args is not None else self.default_args()
        state = self.run_pre_score(pod, args, cluster if cluster is not None else nodes, nodes)
        if state is None:
            return [0] * len(nodes)
        scores = self.raw_scores(state, nodes)
        if self.normalize is not None:
            self.normalize(scores, args)
        return scores

    def verdicts(self, state: Any, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """Filter verdicts aligned with ``nodes`` for a pre_filter state, or None when every node passes
        (the batch form if the plugin has one, else ``filter_node`` node by node)."""
        assert self.filter_node is not None, f"{self.name} does not filter"
        if self.filter_batch is not None:
            return self.filter_batch(state, nodes)
        filter_node = self.filter_node
        return [filter_node(state, node) for node in nodes]

    def raw_scores(self, state: Any, nodes: list[NodeInfo]) -> list[int]:
        """Raw scores for a pre_score state (batch form if the plugin has one)."""
        assert self.score_node is not None, f"{self.name} does not score"
        if self.score_batch is not None:
            return self.score_batch(state, nodes)
        score_node = self.score_node
        return [score_node(state, node) for node in nodes]


def default_normalize(scores: list[int], reverse: bool = False) -> None:
    """kube-scheduler's DefaultNormalizeScore: scale so the highest raw score becomes 100; with
    ``reverse`` a higher raw score is worse (100 - scaled). All zeros stay 0, or all become 100 reversed."""
    top = max(scores, default=0)
    if top == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, raw in enumerate(scores):
        scaled = MAX_NODE_SCORE * raw // top
        scores[i] = MAX_NODE_SCORE - scaled if reverse else scaled


def min_max_normalize(scores: list[int], lower_is_better: bool) -> None:
    """Map the best raw value to 100 and the worst to 0, linearly, rounding down: only nodes holding the
    best raw value get 100, so a random pick among the top never takes a worse node."""
    if not scores:
        return
    low, high = min(scores), max(scores)
    if low == high:
        scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    span = high - low
    if lower_is_better:
        scores[:] = [MAX_NODE_SCORE * (high - s) // span for s in scores]
    else:
        scores[:] = [MAX_NODE_SCORE * (s - low) // span for s in scores]
