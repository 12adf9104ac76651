"""The typed contract of each extension point, and the rules a plugin descriptor must keep.

Each function field of ``Plugin`` has one call signature, stated here as a Protocol (kube-scheduler has one
interface per extension point: PreFilterPlugin, FilterPlugin, ScorePlugin...). A plugin that ``reads_cluster``
gets the cycle's ``ClusterView`` in its pre steps, hence the two pre forms. ``contract_problems`` lists what is
wrong with a descriptor; the ``Registry`` refuses a plugin with any, naming it, so that a bad combination
fails when the plugin is loaded rather than as an AssertionError in the middle of a scheduling cycle.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.handle import CycleState
from scheduler.framework.objects import Resource
from scheduler.framework.plugin import Args, Plugin, Status
from scheduler.framework.points import POINTS
from scheduler.model import NodeInfo, PodInfo

__all__ = [
    "SETUP_METHODS",
    "ClusterPreFilter",
    "ClusterPreScore",
    "Filter",
    "FilterBatch",
    "Normalize",
    "PostFilterNote",
    "PreFilter",
    "PreFilterNodes",
    "PreScore",
    "PreemptionArgs",
    "ReplaceNode",
    "Score",
    "ScoreBatch",
    "contract_problems",
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
    """A PostFilter's part of the FailedScheduling message for a pod no node fits, given the PreFilter rejection
    that ended the cycle (None when the filters ran), and whether the PostFilters after it still run."""

    def __call__(self, pre_filter_rejection: Status | None, /) -> tuple[str, bool]: ...


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


def _setup_problems(plugin: Plugin) -> list[str]:
    """What is wrong with a plugin's setup class: not a class, no point, a Reserve without its Unreserve, a
    method or constructor that cannot be called as the framework calls it."""
    setup = plugin.setup
    if setup is None:
        return []
    if not isinstance(setup, type):
        return [f"setup {setup!r}: give a class; the framework makes it with (args, handle)"]
    problems = []
    methods = [point.method for point in POINTS if point.method and callable(getattr(setup, point.method, None))]
    if not methods:
        names = ", ".join(p.method for p in POINTS if p.method)
        problems.append(f"setup {setup.__name__} has none of the methods {names}")
    if callable(getattr(setup, "reserve", None)) != callable(getattr(setup, "unreserve", None)):
        problems.append(f"setup {setup.__name__}: reserve and unreserve come together (Unreserve undoes what "
                        "Reserve counted when a later point fails); give both")
    try:
        inspect.signature(setup).bind("args", "handle")
    except TypeError:
        problems.append(f"setup {setup.__name__}{inspect.signature(setup)}: the framework makes it with "
                        "(args, handle)")
    except ValueError:
        pass
    for method, contract in SETUP_METHODS.items():
        fn = getattr(setup, method, None)
        if fn is None:
            continue
        problem = _call_problem(fn, contract, bound=True)
        if problem:
            problems.append(f"{setup.__name__}.{method}: {problem}")
    return problems


def contract_problems(plugin: Plugin) -> list[str]:
    """What is wrong with a plugin descriptor, each as a sentence saying the fix; [] when nothing is."""
    problems: list[str] = []
    if not isinstance(plugin.name, str) or not plugin.name or plugin.name == "*" or any(
            c.isspace() for c in plugin.name):
        problems.append(f"name {plugin.name!r}: use a non-empty name without spaces, such as 'NetworkSpeed'")
    if not (isinstance(plugin.args, type) and issubclass(plugin.args, Args)):
        problems.append(f"args {plugin.args!r}: use a subclass of scheduler.framework.Args (or NoArgs)")
    if not (plugin.pre_filter or plugin.filter_node or plugin.pre_score or plugin.score_node
            or plugin.post_filter or plugin.setup):
        problems.append("implements no extension point: give it pre_filter/filter_node, pre_score/score_node "
                        "or a setup class")
    problems += _setup_problems(plugin)
    for field, subresource in (("watches", False), ("writes", True)):
        for text in getattr(plugin, field):
            try:
                Resource.parse(text, subresource=subresource)
            except ValueError as err:
                problems.append(f"{field}: {err}")
    pairs = (
        ("filter_node", "pre_filter", "a per-node filter needs the pre_filter that prepares its state"),
        ("filter_batch", "filter_node", "a batch filter needs the per-node form it must equal"),
        ("score_node", "pre_score", "a per-node score needs the pre_score that prepares its state"),
        ("pre_score", "score_node", "a pre_score needs the score_node that reads its state"),
        ("score_batch", "score_node", "a batch score needs the per-node form it must equal"),
        ("normalize", "score_node", "normalize rescales scores: it needs score_node"),
        ("replace_node", "pre_filter", "replace_node updates the pre_filter state: it needs pre_filter"),
        ("pre_filter_nodes", "pre_filter", "pre_filter_nodes reads the pre_filter state: it needs pre_filter"),
        ("post_filter_note", "pre_filter", "post_filter_note speaks for a filter: it needs pre_filter"),
    )
    for field, needs, why in pairs:
        if getattr(plugin, field) is not None and getattr(plugin, needs) is None:
            problems.append(f"{field} without {needs}: {why}")
    if plugin.replace_node is not None and not plugin.reads_cluster:
        problems.append("replace_node without reads_cluster: it updates state counted over the cluster; a "
                        "plugin that reads only the pod and one node needs none")
    if plugin.reads_cluster and plugin.pre_filter is None and plugin.pre_score is None:
        problems.append("reads_cluster without pre_filter or pre_score: only those steps get the cluster")
    if plugin.requeue_on_fields and not plugin.filters:
        problems.append("requeue_on_fields without a filter: only a filter's rejection leaves a pod waiting")
    elif plugin.requeue_on != ClusterEvent.ANY and not plugin.filters:
        problems.append("requeue_on without a filter: only a filter's rejection leaves a pod waiting")
    if plugin.post_filter and not callable(getattr(plugin.args, "num_candidates", None)):
        problems.append("post_filter: the framework's preemption reads num_candidates(num_nodes) from the "
                        "plugin's args (see DefaultPreemptionArgs)")
    cluster = plugin.reads_cluster
    for field, contract in (
        ("pre_filter", ClusterPreFilter if cluster else PreFilter),
        ("filter_node", Filter),
        ("filter_batch", FilterBatch),
        ("pre_score", ClusterPreScore if cluster else PreScore),
        ("score_node", Score),
        ("score_batch", ScoreBatch),
        ("normalize", Normalize),
        ("replace_node", ReplaceNode),
        ("pre_filter_nodes", PreFilterNodes),
        ("post_filter_note", PostFilterNote),
    ):
        problem = _call_problem(getattr(plugin, field), contract)
        if problem:
            problems.append(f"{field}: {problem}")
    return problems


def _call_problem(fn: Callable[..., Any] | None, contract: type, bound: bool = False) -> str | None:
    """Why ``fn`` cannot be called as ``contract.__call__`` (its positional parameters), or None; ``bound``:
    ``fn`` is a method taken from its class, called on an instance (self first)."""
    if fn is None:
        return None
    if not callable(fn):
        return f"{fn!r} is not callable"
    wanted = [p.name for p in inspect.signature(contract.__call__).parameters.values()][1:]  # minus self
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return None
    try:
        signature.bind(*(["self"] if bound else []), *wanted)
    except TypeError:
        shown = ", ".join(wanted)
        return f"{getattr(fn, '__name__', fn)!r} takes {signature}; its contract is ({shown})"
    return None
