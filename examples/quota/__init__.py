"""NamespaceQuota: cap what the pods of a namespace may hold of a resource (``example.com/gpu``, or cpu, memory,
any extended resource), counting what the scheduler has promised before the API shows it bound.

The limits of a namespace are the data of its ConfigMap named by the ``configMapName`` arg (default
``scheduling-quota``): resource name -> quantity, e.g. ``example.com/gpu: "4"``. A namespace without one, or a
resource it does not name, is not limited. A value that is not a quantity refuses the namespace's pods with
the reason, rather than letting them through unlimited.

- PreFilter: refuses a pod whose requests, added to what its namespace holds, exceed a limit. It counts the
  pods of the snapshot, which holds the bound ones and the ones this scheduler has reserved and not yet bound
  (assumed); no node can change that, so the rejection is unresolvable and DefaultPreemption does not try.
- Reserve: counts the pod against the limits once more, from the API's pods (bound: spec.nodeName set) plus
  the pods it has reserved itself and not yet seen bound, and records it. This is the promise that holds
  while the pod waits at Permit or its binding is on the way (scheduler-plugins' CapacityScheduling counts
  the same way); a pod that no longer fits is refused here and the framework undoes its reservation.
- Unreserve: forgets the pod's reservation (once; calling it again changes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from scheduler.framework import Args, ClusterEvent, ClusterView, Code, CycleState, Handle, Plugin, Status
from scheduler.model import CPU, EPHEMERAL_STORAGE, LENIENT, MEMORY, PODS, PodInfo, Resources

NAME = "NamespaceQuota"
CONFIGMAPS = "v1/configmaps"
PODS_KIND = "v1/pods"


class NamespaceQuotaArgs(Args):
    configMapName: str = Field("scheduling-quota", min_length=1)  # the ConfigMap holding a namespace's limits


def amount(resources: Resources, name: str) -> int:
    """How much of the resource ``name`` (cpu in millicores, memory and storage in bytes, others as counted)."""
    if name == CPU:
        return resources.milli_cpu
    if name == MEMORY:
        return resources.memory
    if name == EPHEMERAL_STORAGE:
        return resources.ephemeral_storage
    if name == PODS:
        return resources.pods
    return resources.scalar.get(name, 0)


def shown(name: str, value: int) -> str:
    return f"{value}m" if name == CPU and value % 1000 else str(value // 1000 if name == CPU else value)


def limits(configmaps: Any, namespace: str, args: NamespaceQuotaArgs) -> dict[str, int] | Status:
    """The namespace's limits by resource name ({} when it has none), or the Status refusing its pods when the
    ConfigMap holds a value that is not a quantity."""
    found = configmaps.get_object(namespace, args.configMapName)
    result: dict[str, int] = {}
    for name, text in ((found or {}).get("data") or {}).items():
        parsed = Resources()
        try:
            parsed.set(name, text)
        except ValueError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          (f"ConfigMap {namespace}/{args.configMapName}: {name}: {err}",), NAME)
        result[name] = amount(parsed, name)
    return result


def over(pod: PodInfo, limited: Mapping[str, int], held: Mapping[str, int]) -> Status | None:
    """The refusal naming the first resource the pod would take over its namespace's limit, or None."""
    for name, limit in sorted(limited.items()):
        wanted = amount(pod.requests, name)
        if wanted and held.get(name, 0) + wanted > limit:
            why = (f"namespace {pod.namespace} over its {name} quota: requests {shown(name, wanted)}, "
                   f"in use {shown(name, held.get(name, 0))} of {shown(name, limit)}")
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (why,), NAME)
    return None


def _add(held: dict[str, int], pod: PodInfo, names: Any) -> None:
    for name in names:
        held[name] = held.get(name, 0) + amount(pod.requests, name)


def pre_filter(pod: PodInfo, args: NamespaceQuotaArgs, cluster: ClusterView) -> Status | None:
    """None when the pod fits its namespace's quota (or the namespace has none), else the refusal."""
    limited = limits(cluster.objects(CONFIGMAPS), pod.namespace, args)
    if isinstance(limited, Status) or not limited:
        return limited or None
    held: dict[str, int] = {}
    for _, counted in cluster.pods():
        if counted.namespace == pod.namespace and counted.uid != pod.uid:
            _add(held, counted, limited)
    return over(pod, limited, held)


class NamespaceQuota:
    """The reservations this scheduler has promised and not yet seen bound, by pod UID."""

    def __init__(self, args: NamespaceQuotaArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.reserved: dict[str, PodInfo] = {}

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        limited = limits(self.handle.objects(CONFIGMAPS), pod.namespace, self.args)
        if isinstance(limited, Status):
            return limited
        bound, live = self._bound(pod.namespace)
        for uid in [uid for uid in self.reserved if uid in bound or uid not in live]:
            del self.reserved[uid]  # seen bound (counted there now), or deleted
        if limited:
            held: dict[str, int] = {}
            for counted in (*bound.values(), *self.reserved.values()):
                if counted.namespace == pod.namespace and counted.uid != pod.uid:
                    _add(held, counted, limited)
            refusal = over(pod, limited, held)
            if refusal is not None:
                return Status(Code.UNSCHEDULABLE, refusal.reasons)  # another decision took it meanwhile
        self.reserved[pod.uid] = pod
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        self.reserved.pop(pod.uid, None)

    def _bound(self, namespace: str) -> tuple[dict[str, PodInfo], set[str]]:
        """The namespace's pods the API shows bound and still running, by UID, and every live pod's UID
        (of any namespace: a reservation of a pod gone from the API is dropped)."""
        bound: dict[str, PodInfo] = {}
        live: set[str] = set()
        pods = self.handle.objects(PODS_KIND)
        for key in pods:
            obj = pods.get(key)
            if obj is None:  # deleted since the keys were read
                continue
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            live.add(str(meta.get("uid") or ""))
            if meta.get("namespace") != namespace or not spec.get("nodeName") or meta.get("deletionTimestamp") \
                    or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            pod = PodInfo.from_api(obj, LENIENT, keep_object=False)
            bound[pod.uid] = pod
        return bound, live


PLUGINS = [Plugin(name=NAME, args=NamespaceQuotaArgs, pre_filter=pre_filter, reads_cluster=True,
                  setup=NamespaceQuota, watches=(CONFIGMAPS, PODS_KIND),
                  requeue_on=ClusterEvent.NODE_ADDED | ClusterEvent.ASSIGNED_POD_DELETED)]
