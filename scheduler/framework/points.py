"""The extension points, in the order one pod meets them: the one table the config, the contract checks, the
runtime and the explainer read (kube-scheduler's framework/interface.go has one interface per point).

Filter (with PreFilter) and Score (with PreScore and NormalizeScore) are the pure half: functions on the
``Plugin`` descriptor. Every other point is a method of the plugin's ``setup`` class, made once per profile
with ``(args, handle)``; DefaultPreemption is the one PostFilter given as a descriptor flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework.plugin import Plugin

__all__ = ["POINTS", "Point", "implements", "point_named"]


@dataclass(frozen=True, slots=True)
class Point:
    config: str  # the key under a profile's ``plugins`` in KubeSchedulerConfiguration
    title: str  # kube-scheduler's name for it
    method: str | None  # the setup class's method implementing it; None for the descriptor's pure functions
    when: str  # when to use it, one line (the plugin API reference repeats it)


POINTS: tuple[Point, ...] = (
    Point("preEnqueue", "PreEnqueue", "pre_enqueue",
          "keep a pod out of the active queue until it may be tried (a gang not yet complete)"),
    Point("queueSort", "QueueSort", "sort_key", "the order pods are tried in; exactly one per profile"),
    Point("filter", "Filter", None, "may this pod go on this node (with PreFilter, once per pod)"),
    Point("postFilter", "PostFilter", "post_filter", "no node fits: make room, or give up on a group"),
    Point("score", "Score", None, "how good is this node (with PreScore and NormalizeScore)"),
    Point("reserve", "Reserve", "reserve",
          "count what the chosen node now promises (quota, devices); ``unreserve`` undoes it"),
    Point("permit", "Permit", "permit", "allow, reject or hold the reserved pod (a gang waits for its members)"),
    Point("preBind", "PreBind", "pre_bind", "write what the decision needs before binding (a device allocation)"),
    Point("bind", "Bind", "bind", "bind the pod; the first plugin that does not skip does it"),
    Point("postBind", "PostBind", "post_bind", "bookkeeping after a successful binding"),
)
_BY_CONFIG = {p.config: p for p in POINTS}


def point_named(config: str) -> Point:
    return _BY_CONFIG[config]


def implements(plugin: Plugin, point: Point) -> bool:
    """Whether ``plugin`` has ``point``."""
    if point.config == "filter":
        return plugin.filters
    if point.config == "score":
        return plugin.scores
    if point.config == "postFilter" and plugin.post_filter:
        return True
    return point.method is not None and plugin.setup is not None and callable(getattr(plugin.setup, point.method,
                                                                                      None))
