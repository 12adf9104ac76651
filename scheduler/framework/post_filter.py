"""The PostFilter step for a pod no node fits (kube-scheduler's RunPostFilterPlugins): each filter plugin of
the profile that has a PostFilter note says its part, in the profile's order, then DefaultPreemption looks for
victims when the profile enables it, then the plugins' own PostFilters (``Extensions.post_filter``) unless one
before ended them. The caller acts on the outcome (evictions, nomination).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.extensions import Extensions
from scheduler.framework.handle import CycleState
from scheduler.framework.preemption import Outcome, PodDisruptionBudget, preempt
from scheduler.framework.profile import Nominated, Profile
from scheduler.framework.result import ScheduleResult
from scheduler.framework.status import Status
from scheduler.model import NodeInfo, PodInfo

__all__ = ["PostFilterResult", "run_post_filters"]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What the PostFilter plugins came to for a pod no node fits: the FailedScheduling ``message`` and
    DefaultPreemption's ``preemption`` outcome when it ran (None when the profile disables it)."""

    message: str
    preemption: Outcome | None = None
    said: tuple[Status, ...] = ()  # the plugins' own PostFilters' statuses, in order



def run_post_filters(profile: Profile, pod: PodInfo, result: ScheduleResult, nodes: Sequence[NodeInfo],
                     cluster: ClusterView, pdbs: Collection[PodDisruptionBudget], nominated: Nominated,
                     rng: random.Random, extensions: Extensions | None = None) -> PostFilterResult:
    """After ``result`` found no node: the plugins' PostFilter notes (``Plugin.post_filter_note``), then
    preemption. The message is the filters' (``result.message``), then, after a space, what the PostFilter
    plugins said, joined by ", ": "... 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes
    are available: ...". A note that ends the PostFilters stops there; when preemption found room the pod is
    nominated and the message is the filters' alone."""
    said: list[str] = []
    for plugin, _ in profile.filters:
        if plugin.post_filter_note is None:
            continue
        text, go_on = plugin.post_filter_note(pod, result.pre_filter_rejection)
        said.append(text)
        if not go_on:
            return PostFilterResult(f"{result.message} {', '.join(said)}")
    outcome = None
    if profile.post_filter is not None:
        _, args = profile.post_filter
        outcome = preempt(profile, args, pod, result, nodes, cluster, pdbs, nominated, rng)
        if outcome.node is not None:
            return PostFilterResult(result.message, outcome)
        said.append(outcome.message)
    own: list[Status] = []
    if extensions is not None and extensions.by_point["postFilter"]:
        own = extensions.post_filter(CycleState(cluster), pod, result.failures)
        said += [reason for status in own for reason in status.reasons if reason]
    return PostFilterResult(f"{result.message} {', '.join(said)}" if said else result.message, outcome, tuple(own))
