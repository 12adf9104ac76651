"""The scheduler's plugins, one module each, registered by the name a KubeSchedulerConfiguration uses.

``DEFAULT_FILTERS`` and ``DEFAULT_SCORES`` are kube-scheduler's default plugin set (v1 config,
pkg/scheduler/apis/config/v1/default_plugins.go), reduced to the plugins this scheduler has, in
kube-scheduler's order and with its default score weights: TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1,
ImageLocality 1. NodeVolumeLimits and DynamicResources only refuse the pods they would have to
check (CSI volumes, DRA claims), since this scheduler cannot. The multiPoint default is the filters, then
DefaultPreemption (PostFilter), then the score-only plugins. NetworkAware and
LeastLoaded are opt-in.

Adding a plugin: write a module with pure ``pre_filter``/``filter_node`` and/or ``pre_score``/
``score_node`` (see ``base.py``), an ``Args`` model if it takes pluginConfig args, a ``PLUGIN =
Plugin(...)`` descriptor, and list it in ``REGISTRY`` below; the config then accepts its name.
"""

from __future__ import annotations

from scheduler.framework.plugin import SUCCESS, Args, ClusterView, Code, NoArgs, Plugin, Status
from scheduler.plugins import (
    balanced_allocation,
    default_preemption,
    dynamic_resources,
    image_locality,
    inter_pod_affinity,
    least_loaded,
    network_aware,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

__all__ = ["DEFAULT_FILTERS", "DEFAULT_POST_FILTERS", "DEFAULT_SCORES", "KUBE_SCHEDULER_DOES", "REGISTRY", "SUCCESS", "Args", "ClusterView", "Code", "NoArgs",
           "Plugin", "Status"]

REGISTRY: dict[str, Plugin] = {
    p.name: p
    for p in (
        node_unschedulable.PLUGIN,
        node_name.PLUGIN,
        taint_toleration.PLUGIN,
        node_affinity.PLUGIN,
        node_ports.PLUGIN,
        node_resources_fit.PLUGIN,
        inter_pod_affinity.PLUGIN,
        network_aware.PLUGIN,
        least_loaded.PLUGIN,
        balanced_allocation.PLUGIN,
        image_locality.PLUGIN,
        pod_topology_spread.PLUGIN,
        volume_restrictions.PLUGIN,
        node_volume_limits.PLUGIN,
        volume_binding.PLUGIN,
        volume_zone.PLUGIN,
        dynamic_resources.PLUGIN,
        default_preemption.PLUGIN,
    )
}

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
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)

# What kube-scheduler does itself before it calls an extender, and what this scheduler can only partly do or
# must refuse (volumes, DRA): an extender leaves these filters out (scheduler.extender.service).
KUBE_SCHEDULER_DOES: frozenset[str] = frozenset(
    {"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"})
