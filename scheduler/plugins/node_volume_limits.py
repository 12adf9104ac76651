"""NodeVolumeLimits, refusing what it cannot check: kube-scheduler's plugin of the same name
(pkg/scheduler/framework/plugins/nodevolumelimits) counts each node's CSI volumes against the limit the
node's CSINode object publishes per driver. This scheduler reads no CSINode objects and counts no attached
volumes, so a pod that would use a CSI volume (an inline ``csi`` volume, or a claim bound to a PV with
``spec.csi``) is refused in PreFilter, naming the volume, the driver and what to do, rather than bound to a
node whose attach limit it may exceed. Unresolvable: only a change to the pod would help.
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, Plugin, Status, unsupported_status
from scheduler.model import PodInfo
from scheduler.model.parsing import Unsupported

NAME = "NodeVolumeLimits"
_REASON = "this scheduler does not count CSI volumes against the node's attach limit (CSINode allocatable)"


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> Status | None:
    """A refusal when the pod uses a CSI volume, else None (nothing to check)."""
    if not pod.claims and not pod.unsupported:  # most pods: nothing to check
        return None
    refusal = unsupported_status(pod, NAME)
    if refusal is not None or not pod.claims:
        return refusal
    store = cluster.volumes
    found = []
    for ref in pod.claims:
        volume = store.bound_volume(pod.namespace, ref.claim)
        if volume is not None and volume.csi_driver:
            where = f'volume "{ref.volume}" (claim "{ref.claim}", PV "{volume.name}", CSI driver {volume.csi_driver})'
            found.append(Unsupported(where, NAME, _REASON).message)
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(found), NAME) if found else None



# A claim bound to a PV of another kind, or the PV replaced; NODE_ADDED as every filter declares it.
REQUEUE_ON = ClusterEvent.PVC_CHANGED | ClusterEvent.PV_CHANGED | ClusterEvent.NODE_ADDED

PLUGIN = Plugin(NAME, pre_filter=pre_filter, requeue_on=REQUEUE_ON, reads_cluster=True)
