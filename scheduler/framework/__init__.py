"""The scheduling framework: the public plugin API and the decision code. Plugins, the bundled ones as a
user's own, import this package and ``scheduler.model`` only; nothing here imports a plugin.

The plugin API:
- ``plugin``: what a plugin is made of (``Plugin``, ``Status``, ``Code``, ``Args``, ``NoArgs``,
  ``same_state``, ``unsupported_status``); its docstring is the plugin author's guide;
- ``status``: ``Status``, ``Code``, ``Args``: what the points return and read;
- ``signatures``: one Protocol per extension point; ``contracts``: the rules a descriptor must keep;
- ``cluster_view``: ``ClusterView``, what a plugin that ``reads_cluster`` sees of the snapshot;
- ``cluster_event``: ``ClusterEvent``, the changes a filter declares can undo its rejection (``requeue_on``);
- ``points``: the extension points, in order (``POINTS``), and which a plugin implements;
- ``handle``: ``Handle`` (what a plugin's own points may use), ``CycleState`` (one pod's cycle), ``ApiCalls``;
- ``objects``: ``Resource`` and ``ObjectStore``, the kinds a plugin ``watches``;
- ``waiting``: ``WaitingPod``, the pods held at Permit;
- ``memo``: ``per_node_memo``, values a batch form keeps per node between decisions;
- ``normalize``: ``MAX_NODE_SCORE``, ``default_normalize``, ``min_max_normalize``;
- ``registry``: ``Registry`` (a value), ``load_registry`` (in-tree + entry points + sources), ``PluginError``.
The decision code:
- ``profile``: ``Profile`` (one scheduling decision: filter, score, pick), ``build_profiles``;
- ``result``: ``ScheduleResult`` and kube-scheduler's FailedScheduling words; ``ties``: the pick among ties;
- ``preemption``: DefaultPreemption's algorithm, run when no node fits;
- ``extensions``: ``Extensions``, a profile's plugin instances and how each point outside filter and score runs.
"""

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.extensions import DEFAULT_BINDER, Extensions, PermitResult, priority_sort_key
from scheduler.framework.handle import ApiCallError, ApiCalls, CycleState, Handle
from scheduler.framework.memo import carry_memo, per_node_memo
from scheduler.framework.normalize import MAX_NODE_SCORE, default_normalize, min_max_normalize
from scheduler.framework.objects import ObjectStore, Resource
from scheduler.framework.plugin import (
    SKIP,
    SUCCESS,
    Args,
    Code,
    NoArgs,
    Plugin,
    PluginFailure,
    Status,
    same_state,
    unsupported_status,
)
from scheduler.framework.points import POINTS, Point, implements, point_named
from scheduler.framework.profile import (
    NO_NOMINATED,
    Nominated,
    Profile,
    WhatIfJudge,
    build_profiles,
    num_feasible_nodes_to_find,
)
from scheduler.framework.registry import (
    ENTRY_POINT_GROUP,
    PluginError,
    Registry,
    in_tree_registry,
    load_registry,
)
from scheduler.framework.result import NO_NODES_MESSAGE, ScheduleResult, fit_error_message
from scheduler.framework.waiting import MAX_PERMIT_WAIT, WaitingPod

__all__ = [
    "DEFAULT_BINDER",
    "ENTRY_POINT_GROUP",
    "MAX_NODE_SCORE",
    "MAX_PERMIT_WAIT",
    "NO_NODES_MESSAGE",
    "NO_NOMINATED",
    "POINTS",
    "SKIP",
    "SUCCESS",
    "ApiCallError",
    "ApiCalls",
    "Args",
    "ClusterEvent",
    "ClusterView",
    "Code",
    "CycleState",
    "Extensions",
    "Handle",
    "NoArgs",
    "Nominated",
    "ObjectStore",
    "PermitResult",
    "Plugin",
    "PluginError",
    "PluginFailure",
    "Point",
    "Profile",
    "Registry",
    "Resource",
    "ScheduleResult",
    "Status",
    "WaitingPod",
    "WhatIfJudge",
    "build_profiles",
    "carry_memo",
    "default_normalize",
    "fit_error_message",
    "implements",
    "in_tree_registry",
    "load_registry",
    "min_max_normalize",
    "num_feasible_nodes_to_find",
    "per_node_memo",
    "point_named",
    "priority_sort_key",
    "same_state",
    "unsupported_status",
]
