"""The scheduler's plugins, one module each, registered by the name a KubeSchedulerConfiguration uses.

``DEFAULT_FILTERS`` and ``DEFAULT_SCORES`` are kube-scheduler's default plugin set (v1 config,
pkg/scheduler/apis/config/v1/default_plugins.go), reduced to the plugins this scheduler has, in
kube-scheduler's order and with its default score weights: TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, DynamicResources 2,
NodeResourcesBalancedAllocation 1, ImageLocality 1. NodeVolumeLimits only refuses the pods it would have to
check (CSI volumes), since this scheduler cannot; DynamicResources allocates DRA claims (``scheduler.dra``). The multiPoint default
(``DEFAULT_PLUGINS``) is the filters, then DefaultPreemption (PostFilter), then the score-only plugins, then
PrioritySort (QueueSort) and DefaultBinder (Bind). With the feature gates GenericWorkload and GangScheduling both
on, kube-scheduler's default gains GangScheduling, last (``default_plugins``).
The bundled examples of plugins of one's own, NetworkAware and LeastLoaded, are not here: they live in
their folders at the repository root (``plugins/network_aware``, ``plugins/least_loaded``) and load with
``--plugins`` as a user's plugins do.

These plugins are written against the public API only (``scheduler.framework``, ``scheduler.model``), as a
user's plugin is; they are declared the way a user's module declares its own (``PLUGINS``), and
``in_tree_registry()`` is the registry they make, which ``scheduler.framework.load_registry`` starts from.
A plugin of your own lives in your own module or folder: see ``scheduler.framework.registry``.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.framework import Plugin, in_tree_registry
from scheduler.plugins import (
    balanced_allocation,
    default_binder,
    default_preemption,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    queue_sort,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

__all__ = ["DEFAULT_FILTERS", "DEFAULT_PLUGINS", "DEFAULT_POST_FILTERS", "DEFAULT_SCORES", "KUBE_SCHEDULER_DOES",
           "PLUGINS", "default_plugins", "in_tree_registry"]

PLUGINS: tuple[Plugin, ...] = (
    node_unschedulable.PLUGIN,
    node_name.PLUGIN,
    taint_toleration.PLUGIN,
    node_affinity.PLUGIN,
    node_ports.PLUGIN,
    node_resources_fit.PLUGIN,
    inter_pod_affinity.PLUGIN,
    balanced_allocation.PLUGIN,
    image_locality.PLUGIN,
    pod_topology_spread.PLUGIN,
    volume_restrictions.PLUGIN,
    node_volume_limits.PLUGIN,
    volume_binding.PLUGIN,
    volume_zone.PLUGIN,
    dynamic_resources.PLUGIN,
    default_preemption.PLUGIN,
    queue_sort.PLUGIN,
    default_binder.PLUGIN,
    gang_scheduling.PLUGIN,
)

# Filters run cheapest and most decisive first, in kube-scheduler's default order.
DEFAULT_FILTERS: tuple[str, ...] = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
)
# Run when no node passes the filters; kube-scheduler lists it after InterPodAffinity.
DEFAULT_POST_FILTERS: tuple[str, ...] = ("DefaultPreemption",)
DEFAULT_SCORES: tuple[tuple[str, int], ...] = (
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)
# The multiPoint default, (name, score weight or 0): filters, then PostFilter, then the score-only plugins, then
# the queue's order and the binding (PrioritySort and DefaultBinder, each the only one at its point).
_WEIGHTS = dict(DEFAULT_SCORES)
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = tuple(
    (name, _WEIGHTS.get(name, 0))
    for name in (*DEFAULT_FILTERS, *DEFAULT_POST_FILTERS, *(n for n in _WEIGHTS if n not in DEFAULT_FILTERS),
                 "PrioritySort", "DefaultBinder"))



def default_plugins(enabled: Callable[[str], bool] | None = None) -> tuple[tuple[str, int], ...]:
    """The multiPoint default under the feature gates (``enabled``: a gate's name -> on, e.g.
    ``FeatureGates.enabled``; None: every gate at its default): kube-scheduler 1.36 adds GangScheduling last
    when GenericWorkload and GangScheduling are both on."""
    if enabled is not None and enabled("GenericWorkload") and enabled("GangScheduling"):
        return (*DEFAULT_PLUGINS, (gang_scheduling.NAME, 0))
    return DEFAULT_PLUGINS


# What kube-scheduler does itself before it calls an extender, and what this scheduler can only partly do or
# must refuse (volumes, DRA): an extender leaves these filters out (scheduler.extender.service).
KUBE_SCHEDULER_DOES: frozenset[str] = frozenset(
    {"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"})
