"""VolumeBinding: a pod's PersistentVolumeClaims decide where it may run (kube-scheduler's plugin of the
same name, pkg/scheduler/framework/plugins/volumebinding: volume_binding.go PreFilter/Filter, binder.go).

PreFilter, rejecting the pod on every node (UnschedulableAndUnresolvable), in upstream's order:
- a claim that does not exist: `persistentvolumeclaim "NAME" not found` (for a generic ephemeral volume,
  `waiting for ephemeral volume controller to create the persistentvolumeclaim "POD-VOLUME"`);
- a claim whose PV is gone (phase Lost), a claim being deleted, an ephemeral volume's claim that the pod
  does not control;
- an unbound claim whose binding is Immediate (or one naming a volume the PV controller has not finished
  binding): "pod has unbound immediate PersistentVolumeClaims" -- the PV controller binds it, then the
  claim's update brings the pod back;
- an unbound claim of a WaitForFirstConsumer class: kube-scheduler would pick a PV or have one provisioned
  for the chosen node and bind the claim before the pod. This scheduler binds no volumes, and a pod bound
  with its claim unbound would never start, so the pod is refused, saying why and what to do. It is
  unresolvable (preemption cannot help); the claim becoming bound by someone else (a PVC update) requeues it.
Filter, per node: every bound claim's PV must exist ("node(s) unavailable due to one or more pvc(s) bound
to non-existent pv(s)") and its ``spec.nodeAffinity.required`` must match the node ("node(s) had volume
node affinity conflict"); both UnschedulableAndUnresolvable, the first failing claim's reason only.

Not done: binding or provisioning volumes (Reserve/PreBind), the storage-capacity checks, and the
StorageCapacityScoring score. A pod using no claims costs one attribute test.
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.volumes import Claim, PodClaim, Volume

NAME = "VolumeBinding"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
_NODE_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NODE_CONFLICT,), NAME)
_PV_NOT_EXIST = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (PV_NOT_EXIST,), NAME)


def _reject(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), NAME)


def waits_for_first_consumer(claims: list[Claim]) -> str:
    names = ", ".join(f'"{c.name}"' for c in claims)
    classes = ", ".join(sorted({f'"{c.storage_class}"' for c in claims}))
    return (f"persistentvolumeclaim {names} is unbound and its StorageClass {classes} binds on first use "
            "(volumeBindingMode WaitForFirstConsumer), which this scheduler does not do: schedule this pod "
            "with the default scheduler (leave spec.schedulerName unset) or run this one as a scheduler "
            "extender, or bind the claim first")


def _claim_problem(pod: PodInfo, ref: PodClaim, claim: Claim | None) -> str | None:
    """Why the claim cannot be used at all (podHasPVCs), or None."""
    if claim is None:
        if ref.ephemeral:
            return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{ref.claim}"'
        return f'persistentvolumeclaim "{ref.claim}" not found'
    if claim.lost:
        return f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume "{claim.volume_name}"'
    if claim.deleting:
        return f'persistentvolumeclaim "{claim.name}" is being deleted'
    if ref.ephemeral and claim.controller_uid != pod.uid:
        return (f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
                "(pod is not owner)")
    return None


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> tuple[Volume | None, ...] | Status | None:
    """The PVs of the pod's bound claims (None for one that does not exist), or a rejection; None when no
    claim restricts the node."""
    if not pod.claims:
        return None
    store = cluster.volumes
    claims = []
    for ref in pod.claims:
        claim = store.claim(pod.namespace, ref.claim)
        problem = _claim_problem(pod, ref, claim)
        if problem is not None:
            return _reject(problem)
        claims.append(claim)
    delayed = [c for c in claims if not c.bound and not c.volume_name and store.delayed_binding(c)]
    if any(not c.bound for c in claims if c not in delayed):
        return _reject(UNBOUND_IMMEDIATE)
    if delayed:
        return _reject(waits_for_first_consumer(delayed))
    volumes = tuple(store.volumes.get(c.volume_name) for c in claims)
    if all(v is not None and v.node_affinity is None for v in volumes):
        return None
    return volumes


def filter_node(volumes: tuple[Volume | None, ...], node: NodeInfo) -> Status | None:
    labels = node.labels
    for volume in volumes:
        if volume is None:
            return _PV_NOT_EXIST
        if not volume.fits(labels):
            return _NODE_CONFLICT
    return None


# A claim bound or created, a PV added or changed, a class created or changed, or a node that a PV's
# node affinity may now select (volume_binding.go EventsToRegister).
REQUEUE_ON = (ClusterEvent.PVC_CHANGED | ClusterEvent.PV_CHANGED | ClusterEvent.STORAGE_CLASS_CHANGED
              | ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON, reads_cluster=True)
