"""NodeName: a pod that names a node in ``spec.nodeName`` fits only that node."""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"
_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def pre_filter(pod: PodInfo, args: Args) -> str | None:
    return pod.node_name or None


def filter_node(wanted: str, node: NodeInfo) -> Status | None:
    return None if node.name == wanted else _REJECT


# Only a node of that name appearing can help.
REQUEUE_ON = ClusterEvent.NODE_ADDED

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON)
