"""The rules a plugin descriptor must keep: each function it gives fits its extension point's signature
(``signatures``), the functions come in the combinations the framework can run, its setup class has the
methods of the points it claims. ``contract_problems`` lists what is wrong; the ``Registry`` refuses a plugin
with any, naming it, so that a bad combination fails when the plugin is loaded rather than as an
AssertionError in the middle of a scheduling cycle.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.objects import Resource
from scheduler.framework.plugin import Args, Plugin
from scheduler.framework.points import POINTS
from scheduler.framework.signatures import (
    SETUP_METHODS,
    ClusterPreFilter,
    ClusterPreScore,
    Filter,
    FilterBatch,
    Normalize,
    PostFilterNote,
    PreFilter,
    PreFilterNodes,
    PreScore,
    ReplaceNode,
    Score,
    ScoreBatch,
)

__all__ = ["contract_problems"]


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
