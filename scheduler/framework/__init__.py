"""The scheduling framework: the public plugin API and the decision code. Plugins, the bundled ones as a
user's own, import this package and ``scheduler.model`` only; nothing here imports a plugin.

The plugin API:
- ``plugin``: what a plugin is made of (``Plugin``, ``Status``, ``Code``, ``Args``, ``NoArgs``,
  ``same_state``, ``unsupported_status``); its docstring is the plugin author's guide;
- ``contracts``: one Protocol per extension point, and the rules a descriptor must keep;
- ``cluster_view``: ``ClusterView``, what a plugin that ``reads_cluster`` sees of the snapshot;
- ``cluster_event``: ``ClusterEvent``, the changes a filter declares can undo its rejection (``requeue_on``);
- ``memo``: ``per_node_memo``, values a batch form keeps per node between decisions;
- ``normalize``: ``MAX_NODE_SCORE``, ``default_normalize``, ``min_max_normalize``;
- ``registry``: ``Registry`` (a value), ``load_registry`` (in-tree + entry points + sources), ``PluginError``.
The decision code:
- ``profile``: ``Profile`` (one scheduling decision: filter, score, pick), ``ScheduleResult``,
  ``build_profiles``;
- ``preemption``: DefaultPreemption's algorithm, run when no node fits.
"""

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.memo import carry_memo, per_node_memo
from scheduler.framework.normalize import MAX_NODE_SCORE, default_normalize, min_max_normalize
from scheduler.framework.plugin import (
    SUCCESS,
    Args,
    Code,
    NoArgs,
    Plugin,
    Status,
    same_state,
    unsupported_status,
)
from scheduler.framework.profile import (
    NO_NODES_MESSAGE,
    NO_NOMINATED,
    Nominated,
    Profile,
    ScheduleResult,
    WhatIfJudge,
    build_profiles,
    fit_error_message,
    num_feasible_nodes_to_find,
)
from scheduler.framework.registry import (
    ENTRY_POINT_GROUP,
    PluginError,
    Registry,
    in_tree_registry,
    load_registry,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_NODE_SCORE",
    "NO_NODES_MESSAGE",
    "NO_NOMINATED",
    "SUCCESS",
    "Args",
    "ClusterEvent",
    "ClusterView",
    "Code",
    "NoArgs",
    "Nominated",
    "Plugin",
    "PluginError",
    "Profile",
    "Registry",
    "ScheduleResult",
    "Status",
    "WhatIfJudge",
    "build_profiles",
    "carry_memo",
    "default_normalize",
    "fit_error_message",
    "in_tree_registry",
    "load_registry",
    "min_max_normalize",
    "num_feasible_nodes_to_find",
    "per_node_memo",
    "same_state",
    "unsupported_status",
]
