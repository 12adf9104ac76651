"""Cluster events: the changes that may make a pod no node fits schedulable, and how they are read from a
node's or a pod's before and after (kube-scheduler's ClusterEvent and its NodeSchedulingPropertiesChange /
PodSchedulingPropertiesChange). Not to be confused with ``events.py``, which writes Kubernetes Event objects.

Each filter plugin declares the events that can undo its rejection (``Plugin.requeue_on``, kube-scheduler's
EventsToRegister). When no node fits a pod, its profile answers with the union over the plugins that
rejected it, and the queue keeps that answer with the pod: an event outside it leaves the pod waiting
(for instance, a kubelet heartbeat changes nothing here at all, and a new node label does not help a pod
that only lacked cpu). Pure: no I/O.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from scheduler.model import NodeInfo, PodInfo, Resources, Taint


class ClusterEvent(enum.Flag):
    NODE_ADDED = enum.auto()
    NODE_LABELS_CHANGED = enum.auto()
    # spec.taints, spec.unschedulable (kube-scheduler reports it as a taint change too), or the taints the
    # node's conditions imply.
    NODE_TAINTS_CHANGED = enum.auto()
    NODE_ALLOCATABLE_CHANGED = enum.auto()
    # A pod counted on a node was deleted or finished: its resources and host ports are free again.
    ASSIGNED_POD_DELETED = enum.auto()
    # A pod newly counted on a node (bound by anyone, or its binding confirmed), or one counted whose labels
    # changed: what pod affinity and topology spread wait for.
    ASSIGNED_POD_ADDED = enum.auto()
    ASSIGNED_POD_LABELS_CHANGED = enum.auto()
    # Changes to the waiting pod itself.
    POD_LABELS_CHANGED = enum.auto()
    POD_ANNOTATIONS_CHANGED = enum.auto()
    POD_REQUESTS_CHANGED = enum.auto()
    POD_TOLERATIONS_CHANGED = enum.auto()
    POD_NODE_AFFINITY_CHANGED = enum.auto()  # spec.nodeSelector or required node affinity
    POD_HOST_PORTS_CHANGED = enum.auto()
    POD_TOPOLOGY_SPREAD_CHANGED = enum.auto()
    POD_SPEC_ERROR_CHANGED = enum.auto()  # a spec that could not be read now reads, or fails elsewhere
    # Storage objects added or updated (kube-scheduler registers no delete events for them either).
    PVC_CHANGED = enum.auto()
    PV_CHANGED = enum.auto()
    STORAGE_CLASS_CHANGED = enum.auto()

    NONE = 0
    POD_UPDATED = (POD_LABELS_CHANGED | POD_ANNOTATIONS_CHANGED | POD_REQUESTS_CHANGED
                   | POD_TOLERATIONS_CHANGED | POD_NODE_AFFINITY_CHANGED | POD_HOST_PORTS_CHANGED
                   | POD_TOPOLOGY_SPREAD_CHANGED | POD_SPEC_ERROR_CHANGED)
    ANY = (NODE_ADDED | NODE_LABELS_CHANGED | NODE_TAINTS_CHANGED | NODE_ALLOCATABLE_CHANGED
           | ASSIGNED_POD_DELETED | ASSIGNED_POD_ADDED | ASSIGNED_POD_LABELS_CHANGED | POD_UPDATED
           | PVC_CHANGED | PV_CHANGED | STORAGE_CLASS_CHANGED)


class NodeProperties(NamedTuple):
    """What of a node the filter plugins read; taken before an update, since the cache updates in place."""

    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: Resources
    unschedulable: bool

    @classmethod
    def of(cls, node: NodeInfo) -> NodeProperties:
        return cls(node.labels, node.taints, node.allocatable, node.unschedulable)


def node_change(before: NodeProperties | None, after: NodeProperties) -> ClusterEvent:
    """The events a node add (``before`` None) or update amounts to; NONE for a status heartbeat."""
    if before is None:
        return ClusterEvent.NODE_ADDED
    event = ClusterEvent.NONE
    if before.labels != after.labels:
        event |= ClusterEvent.NODE_LABELS_CHANGED
    if before.taints != after.taints or before.unschedulable != after.unschedulable:
        event |= ClusterEvent.NODE_TAINTS_CHANGED
    if before.allocatable != after.allocatable:
        event |= ClusterEvent.NODE_ALLOCATABLE_CHANGED
    return event


def pod_change(old: PodInfo, new: PodInfo) -> ClusterEvent:
    """The events an update of a waiting pod amounts to; NONE for a status-only update (such as our own
    PodScheduled condition coming back through the watch)."""
    event = ClusterEvent.NONE
    if old.labels != new.labels:
        event |= ClusterEvent.POD_LABELS_CHANGED
    if old.annotations != new.annotations:
        event |= ClusterEvent.POD_ANNOTATIONS_CHANGED
    if old.requests != new.requests:
        event |= ClusterEvent.POD_REQUESTS_CHANGED
    if old.tolerations != new.tolerations:
        event |= ClusterEvent.POD_TOLERATIONS_CHANGED
    if old.node_selector != new.node_selector or old.required_node_affinity != new.required_node_affinity:
        event |= ClusterEvent.POD_NODE_AFFINITY_CHANGED
    if old.host_ports != new.host_ports:
        event |= ClusterEvent.POD_HOST_PORTS_CHANGED
    if old.topology_spread != new.topology_spread:
        event |= ClusterEvent.POD_TOPOLOGY_SPREAD_CHANGED
    if _problem(old) != _problem(new):
        event |= ClusterEvent.POD_SPEC_ERROR_CHANGED
    return event


def assigned_pod_change(before: PodInfo | None, after: PodInfo) -> ClusterEvent:
    """The events a pod counted on a node amounts to: new to the cache (``before`` None), or relabelled.
    An assumed pod the watch confirms is no event: it was counted since it was assumed."""
    if before is None:
        return ClusterEvent.ASSIGNED_POD_ADDED
    if before.labels != after.labels:
        return ClusterEvent.ASSIGNED_POD_LABELS_CHANGED
    return ClusterEvent.NONE


def _problem(pod: PodInfo) -> tuple[str, str] | None:
    error = pod.spec_error
    return None if error is None else (error.field, error.reason)
