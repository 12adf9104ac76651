"""VolumeZone: a pod whose bound PV carries zone or region labels goes only to nodes in that zone or region
(kube-scheduler's plugin of the same name, pkg/scheduler/framework/plugins/volumezone).

For every bound claim's PV and each of its topology labels (topology.kubernetes.io/zone and /region, and
their failure-domain.beta.kubernetes.io forms), a node that carries any of those labels must have the PV's
value for that key, or one of its values ("a__b" lists several zones), reading the GA label when the node
lacks the beta one: else "node(s) had no available volume zone", UnschedulableAndUnresolvable. A node with
none of the labels is not constrained. Unbound claims and missing PVs are VolumeBinding's to report.
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.volumes import ZONE_LABELS

NAME = "VolumeZone"
NO_VOLUME_ZONE = "node(s) had no available volume zone"
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VOLUME_ZONE,), NAME)
_GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> tuple[tuple[str, frozenset[str]], ...] | None:
    """Each (label key, allowed values) the pod's bound PVs require, or None when they require none."""
    if not pod.claims:
        return None
    store = cluster.volumes
    wanted = []
    for ref in pod.claims:
        volume = store.bound_volume(pod.namespace, ref.claim)
        if volume is None:
            continue
        for key in ZONE_LABELS:
            value = volume.labels.get(key)
            if value is not None:
                wanted.append((key, frozenset(value.split("__"))))
    return tuple(wanted) or None


def filter_node(wanted: tuple[tuple[str, frozenset[str]], ...], node: NodeInfo) -> Status | None:
    labels = node.labels
    if not any(key in labels for key in ZONE_LABELS):
        return None
    for key, values in wanted:
        value = labels.get(key)
        if value is None:
            value = labels.get(_GA_LABEL.get(key, key))
        if value is None or value not in values:
            return _CONFLICT
    return None


REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.PVC_CHANGED
              | ClusterEvent.PV_CHANGED | ClusterEvent.STORAGE_CLASS_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON, reads_cluster=True)
