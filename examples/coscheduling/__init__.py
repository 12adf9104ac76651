"""Coscheduling: gang scheduling for pods that are only useful together (the workers of a training job).

A PodGroup (``scheduling.x-k8s.io/v1alpha1``, resource ``podgroups``; crds/podgroup.yaml) says how many of its
pods must be placed at once (``spec.minMember``) and how long placed members may wait for the rest
(``spec.scheduleTimeoutSeconds``; default: the ``permitWaitingTimeSeconds`` arg). A pod joins the group named
by its label ``scheduling.x-k8s.io/pod-group``, in its own namespace. A gang is bound whole or not at all:

- PreEnqueue: a member stays out of the queue until its group exists and has minMember pods;
- QueueSort: higher priority first, then the older group (a pod without one: its own creation time), then
  the group's name, then the pod's: a gang's members are tried back to back, not interleaved with others;
- PreFilter: a member whose group is missing or too small is refused whatever the node;
- Permit: a placed member waits (the group's timeout) until minMember members are placed (assumed or
  bound); the member that completes the count lets the waiting ones go;
- PostFilter: a member no node fits ends its gang's attempt: the waiting members are rejected, so the gang
  holds no room another gang could use (with ``podGroupBackoffSeconds`` set, Permit also turns the gang's
  later members away for that long, instead of letting them wait out the timeout);
- Reserve/Unreserve: a member's reservation undone (a timeout, a failed bind) rejects its waiting siblings.

Modelled on scheduler-plugins' Coscheduling (pkg/coscheduling), written for this framework. The pods are
read through the watched kind ``v1/pods`` (members pending or bound), the groups through ``podgroups``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from scheduler.framework import MAX_PERMIT_WAIT, Args, ClusterView, Code, CycleState, Handle, Plugin, Status
from scheduler.model import PodInfo

NAME = "Coscheduling"
PODGROUPS = "scheduling.x-k8s.io/v1alpha1/podgroups"
PODS = "v1/pods"
LABEL = "scheduling.x-k8s.io/pod-group"


class CoschedulingArgs(Args):
    # How long placed members wait for the rest when their PodGroup sets no scheduleTimeoutSeconds.
    permitWaitingTimeSeconds: int = Field(60, ge=1, le=int(MAX_PERMIT_WAIT))
    # After a member could not be placed, how long the gang's members are turned away at Permit (0: never).
    podGroupBackoffSeconds: int = Field(0, ge=0, le=int(MAX_PERMIT_WAIT))


def group_of(pod: PodInfo) -> str | None:
    """The name of the pod's PodGroup, or None for a pod outside any gang."""
    return pod.labels.get(LABEL) or None


def min_member(group: Any) -> int:
    return int((group.get("spec") or {}).get("minMember") or 1)


def members(pods: Any, namespace: str, name: str) -> int:
    """How many live pods (not finished, not being deleted) of ``namespace`` carry the group's label."""
    count = 0
    for obj in pods.labelled(namespace, LABEL, name):
        meta = obj.get("metadata") or {}
        if not meta.get("deletionTimestamp") and (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            count += 1
    return count


def placed(cluster: ClusterView, namespace: str, name: str) -> int:
    """How many members the snapshot counts on nodes (bound or assumed)."""
    return len(cluster.pods_labelled(namespace, LABEL, name))


def _missing(namespace: str, name: str) -> str:
    return f"PodGroup {namespace}/{name} not found"


def _too_small(namespace: str, name: str, count: int, wanted: int) -> str:
    return f"PodGroup {namespace}/{name} has {count} of its minMember {wanted} pods"


def pre_filter(pod: PodInfo, args: CoschedulingArgs, cluster: ClusterView) -> Status | None:
    """Refuse a member whose group is missing or smaller than minMember (no node can help); None otherwise."""
    name = group_of(pod)
    if name is None:
        return None
    group = cluster.objects(PODGROUPS).get_object(pod.namespace, name)
    if group is None:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (_missing(pod.namespace, name),), NAME)
    count, wanted = members(cluster.objects(PODS), pod.namespace, name), min_member(group)
    if count < wanted:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (_too_small(pod.namespace, name, count, wanted),), NAME)
    return None


def _epoch(timestamp: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(timestamp)).timestamp() if timestamp else None
    except ValueError:
        return None


class Coscheduling:
    """The points outside the filter, made once per profile with the handle."""

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.backing_off: dict[str, float] = {}  # "namespace/group" -> until when (the handle's clock)

    def _group(self, pod: PodInfo) -> tuple[str, Any] | None:
        """(name, PodGroup object or None) of a member; None for a pod outside any gang."""
        name = group_of(pod)
        if name is None:
            return None
        return name, self.handle.objects(PODGROUPS).get_object(pod.namespace, name)

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        found = self._group(pod)
        if found is None:
            return None
        name, group = found
        if group is None:
            return Status(Code.UNSCHEDULABLE, (_missing(pod.namespace, name),))
        count, wanted = members(self.handle.objects(PODS), pod.namespace, name), min_member(group)
        if count < wanted:
            return Status(Code.UNSCHEDULABLE, (_too_small(pod.namespace, name, count, wanted),))
        return None

    def sort_key(self, pod: PodInfo, enqueued_at: float) -> tuple[int, float, str, str]:
        """(-priority, the group's creation time, the group's key, the pod's key): a gang's members sit
        together. Objects from an API server always carry a creationTimestamp; without one, the pod's own,
        then its time in the queue."""
        found = self._group(pod)
        created = None
        group_key = ""
        if found is not None:
            name, group = found
            group_key = f"{pod.namespace}/{name}"
            if group is not None:
                created = _epoch((group.get("metadata") or {}).get("creationTimestamp"))
        if created is None:
            created = _epoch(pod.creation_timestamp)
        return (-pod.priority, enqueued_at if created is None else created, group_key, pod.key)

    def post_filter(self, cycle: CycleState, pod: PodInfo, failures: Any) -> Status:
        """A member no node fits: reject the gang's waiting members unless the gang is already complete."""
        found = self._group(pod)
        if found is None or found[1] is None:
            return Status(Code.UNSCHEDULABLE)  # nothing to add: the filters said why
        name, group = found
        if cycle.cluster is not None and placed(cycle.cluster, pod.namespace, name) >= min_member(group):
            return Status(Code.UNSCHEDULABLE)  # a member beyond minMember: the gang stands without it
        self._reject_waiting(pod, name, f"PodGroup {pod.namespace}/{name} rejected: member {pod.name} cannot be placed")
        if self.args.podGroupBackoffSeconds:
            self.backing_off[f"{pod.namespace}/{name}"] = self.handle.now() + self.args.podGroupBackoffSeconds
        return Status(Code.UNSCHEDULABLE, (f"PodGroup {pod.namespace}/{name} rejected: this member cannot be placed",))

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        return None  # nothing to count: Permit counts the members the snapshot holds

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        """A member's reservation undone: its waiting siblings go too (rejecting twice is harmless)."""
        name = group_of(pod)
        if name is not None:
            self._reject_waiting(pod, name, f"PodGroup {pod.namespace}/{name} rejected: member {pod.name} "
                                            "gave back its reservation")

    def permit(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        found = self._group(pod)
        if found is None:
            return None
        name, group = found
        if group is None:
            return Status(Code.UNSCHEDULABLE, (_missing(pod.namespace, name),))
        until = self.backing_off.get(f"{pod.namespace}/{name}")
        if until is not None:
            if self.handle.now() < until:
                why = (f"PodGroup {pod.namespace}/{name} is backing off for {self.args.podGroupBackoffSeconds}s: "
                       "a member could not be placed")
                return Status(Code.UNSCHEDULABLE, (why,))
            del self.backing_off[f"{pod.namespace}/{name}"]
        already = placed(cycle.cluster, pod.namespace, name) if cycle.cluster is not None else 0
        if already + 1 < min_member(group):  # the snapshot does not count this pod yet
            wanted = min_member(group)
            why = f"PodGroup {pod.namespace}/{name} has {already + 1} of its minMember {wanted} pods placed"
            return Status(Code.WAIT, (why,), timeout=self._timeout(group))
        for waiting in self.handle.waiting_pods():
            if waiting.pod.namespace == pod.namespace and group_of(waiting.pod) == name:
                waiting.allow(NAME)
        return None

    def _timeout(self, group: Any) -> float:
        seconds = (group.get("spec") or {}).get("scheduleTimeoutSeconds") or self.args.permitWaitingTimeSeconds
        return float(min(max(int(seconds), 1), MAX_PERMIT_WAIT))

    def _reject_waiting(self, pod: PodInfo, name: str, message: str) -> None:
        for waiting in self.handle.waiting_pods():
            if waiting.pod.uid != pod.uid and waiting.pod.namespace == pod.namespace \
                    and group_of(waiting.pod) == name:
                waiting.reject(NAME, message)


PLUGINS = [Plugin(name=NAME, args=CoschedulingArgs, pre_filter=pre_filter, reads_cluster=True, setup=Coscheduling,
                  watches=(PODGROUPS, PODS))]
