"""VolumeRestrictions: a claim with the ReadWriteOncePod access mode is used by one pod at a time
(kube-scheduler's plugin of the same name, pkg/scheduler/framework/plugins/volumerestrictions).

PreFilter reads the claims of the pod's persistentVolumeClaim volumes (not its generic ephemeral ones, as
upstream): one that does not exist rejects the pod (`persistentvolumeclaim "NAME" not found`,
UnschedulableAndUnresolvable; this plugin runs before VolumeBinding, so kube-scheduler's message comes from
here). When a counted pod anywhere in the cluster (bound or assumed) uses one of the pod's ReadWriteOncePod
claims, every node is refused: "node has pod using PersistentVolumeClaim with the same name and
ReadWriteOncePod access mode", Unschedulable (evicting that pod would free the claim).

Not honoured, so refused outright (PreFilter, unresolvable, naming the field): inline gcePersistentDisk,
awsElasticBlockStore, rbd and iscsi volumes, whose "same disk twice on a node" conflicts
("node(s) had no available disk") this scheduler does not check.
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, Plugin, Status, unsupported_status
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.volumes import READ_WRITE_ONCE_POD

NAME = "VolumeRestrictions"
READ_WRITE_ONCE_POD_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
_CONFLICT = Status(Code.UNSCHEDULABLE, (READ_WRITE_ONCE_POD_CONFLICT,), NAME)


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> bool | Status | None:
    """True when another pod already uses one of the pod's ReadWriteOncePod claims; a refusal; or None."""
    if not pod.claims and not pod.unsupported:  # most pods: nothing to check
        return None
    refusal = unsupported_status(pod, NAME)
    if refusal is not None:
        return refusal
    store = cluster.volumes
    exclusive = set()
    for ref in pod.claims:
        if ref.ephemeral:
            continue
        claim = store.claim(pod.namespace, ref.claim)
        if claim is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'persistentvolumeclaim "{ref.claim}" not found',), NAME)
        if READ_WRITE_ONCE_POD in claim.access_modes:
            exclusive.add(ref.claim)
    if not exclusive:
        return None
    namespace = pod.namespace
    for _labels, other in cluster.pods():
        if other.namespace == namespace and any(not ref.ephemeral and ref.claim in exclusive for ref in other.claims):
            return True
    return None


def filter_node(in_use: bool, node: NodeInfo) -> Status:
    """Every node: the claim is taken cluster-wide, not on one node (upstream's conflictingPVCRefCount)."""
    return _CONFLICT


# A pod using the claim leaves, a new node, a claim created or changed (volumerestrictions EventsToRegister).
REQUEUE_ON = ClusterEvent.ASSIGNED_POD_DELETED | ClusterEvent.NODE_ADDED | ClusterEvent.PVC_CHANGED

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON, reads_cluster=True)
