"""NodeUnschedulable: skip cordoned nodes (``spec.unschedulable: true``) unless the pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint, as kube-scheduler's plugin of the same name does."""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, Plugin, Status, same_state
from scheduler.model import TAINT_UNSCHEDULABLE, NodeInfo, PodInfo, Taint, is_tolerated

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"
_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)
_UNSCHEDULABLE = Taint(TAINT_UNSCHEDULABLE, "", "NoSchedule")


def pre_filter(pod: PodInfo, args: Args, cluster: ClusterView) -> bool | None:
    """None (nothing to check) when no node is cordoned or the pod tolerates cordoned nodes."""
    if not cluster.traits.cordoned or is_tolerated(pod.tolerations, _UNSCHEDULABLE):
        return None
    return True


def filter_node(state: bool, node: NodeInfo) -> Status | None:
    return _REJECT if node.unschedulable else None


def filter_batch(state: bool, nodes: list[NodeInfo]) -> list[Status | None] | None:
    cordoned = [node.unschedulable for node in nodes]
    if True not in cordoned:
        return None  # the usual case: nothing cordoned among these nodes
    return [_REJECT if c else None for c in cordoned]


# A node uncordoned (kube-scheduler reports it as a taint change) or added, or the pod given a
# toleration.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_TAINTS_CHANGED
              | ClusterEvent.POD_TOLERATIONS_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, filter_batch=filter_batch,
                requeue_on=REQUEUE_ON, reads_cluster=True, replace_node=same_state)
