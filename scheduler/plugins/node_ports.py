"""NodePorts: a pod asking for a host port fits only nodes where no counted pod holds it.

Conflict rule (kube-scheduler's HostPortInfo): same protocol and port, and either address is the
wildcard 0.0.0.0 or both addresses are equal.
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
_REJECT = Status(Code.UNSCHEDULABLE, (REASON,), NAME)
_ANY = "0.0.0.0"


def pre_filter(pod: PodInfo, args: Args) -> tuple[tuple[tuple[str, int], str], ...] | None:
    if not pod.host_ports:
        return None
    return tuple(((protocol, port), ip) for protocol, ip, port in pod.host_ports)


def filter_node(wanted: tuple[tuple[tuple[str, int], str], ...], node: NodeInfo) -> Status | None:
    used = node.used_ports
    if not used:
        return None
    for key, ip in wanted:
        ips = used.get(key)
        if ips and (ip == _ANY or _ANY in ips or ip in ips):
            return _REJECT
    return None


# The pod holding the port gone, a node added, or the pod asking for other ports.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.ASSIGNED_POD_DELETED
              | ClusterEvent.POD_HOST_PORTS_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, requeue_on=REQUEUE_ON)
