"""VolumeRestrictions: a claim with the ReadWriteOncePod access mode is used by one pod at a time
(kube-scheduler's plugin of the same name, pkg/scheduler/framework/plugins/volumerestrictions).

Filter: a node where a counted pod already uses one of the pod's ReadWriteOncePod claims (same namespace and
claim name) is refused: "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod
access mode", Unschedulable (evicting that pod would make room). Claims that do not exist are
VolumeBinding's to report.

Not honoured, so refused outright (PreFilter, unresolvable, naming the field): inline gcePersistentDisk,
awsElasticBlockStore, rbd and iscsi volumes, whose "same disk twice on a node" conflicts
("node(s) had no available disk") this scheduler does not check.
"""

from __future__ import annotations

from scheduler.cluster_event import ClusterEvent
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.volumes import READ_WRITE_ONCE_POD
from scheduler.plugins.base import Args, ClusterView, Code, Plugin, Status, unsupported_status

NAME = "VolumeRestrictions"
READ_WRITE_ONCE_POD_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
_CONFLICT = Status(Code.UNSCHEDULABLE, (READ_WRITE_ONCE_POD_CONFLICT,), NAME)


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> tuple[str, frozenset[str]] | Status | None:
    """(namespace, the pod's ReadWriteOncePod claim names), or a refusal, or None: nothing to check."""
    if not pod.claims and not pod.unsupported:  # most pods: nothing to check
        return None
    refusal = unsupported_status(pod, NAME)
    if refusal is not None or not pod.claims:
        return refusal
    store = cluster.volumes
    exclusive = frozenset(ref.claim for ref in pod.claims
                          if (claim := store.claim(pod.namespace, ref.claim)) is not None
                          and READ_WRITE_ONCE_POD in claim.access_modes)
    return (pod.namespace, exclusive) if exclusive else None


def filter_node(state: tuple[str, frozenset[str]], node: NodeInfo) -> Status | None:
    namespace, exclusive = state
    for other in node.pods.values():
        if other.claims and other.namespace == namespace and any(ref.claim in exclusive for ref in other.claims):
            return _CONFLICT
    return None


# A pod using the claim leaves, a new node, a claim created (volumerestrictions EventsToRegister).
REQUEUE_ON = ClusterEvent.ASSIGNED_POD_DELETED | ClusterEvent.NODE_ADDED | ClusterEvent.PVC_CHANGED

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON, reads_cluster=True)
