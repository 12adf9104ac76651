"""The scheduling framework: the public plugin API and the decision code.

- ``plugin``: what a plugin is made of (``Plugin``, ``Status``, ``Code``, ``Args``, ``ClusterView``, the
  per-node memo, score normalisation helpers);
- ``cluster_event``: the cluster events a plugin declares can undo its rejection;
- ``profile``: one scheduling decision over a profile's plugins (filter, score, pick);
- ``preemption``: DefaultPreemption's algorithm, run when no node fits.

Plugins import this package and ``scheduler.model`` only; nothing here imports a plugin.
"""

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.plugin import (
    MAX_NODE_SCORE,
    SUCCESS,
    Args,
    ClusterView,
    Code,
    NoArgs,
    Plugin,
    Status,
    carry_memo,
    default_normalize,
    min_max_normalize,
    per_node_memo,
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

__all__ = [
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
    "Profile",
    "ScheduleResult",
    "Status",
    "WhatIfJudge",
    "build_profiles",
    "carry_memo",
    "default_normalize",
    "fit_error_message",
    "min_max_normalize",
    "num_feasible_nodes_to_find",
    "per_node_memo",
    "same_state",
    "unsupported_status",
]
