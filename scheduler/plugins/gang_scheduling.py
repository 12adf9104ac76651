"""GangScheduling: kube-scheduler 1.36's all-or-nothing placement of a PodGroup's pods (Workload API,
``scheduling.k8s.io/v1alpha2``), on when the feature gates GenericWorkload and GangScheduling both are.

A pod joins a gang with ``spec.schedulingGroup.podGroupName``: the PodGroup of that name in the pod's namespace,
whose ``spec.schedulingPolicy`` is ``gang: {minCount}`` (all-or-nothing for at least minCount pods) or
``basic: {}`` (each pod placed on its own, as if it had no group). kube-scheduler's rules, with its messages:

- PreEnqueue: a member stays out of the queue while its PodGroup does not exist ("waiting for pods's pod group
  "<name>" to appear in scheduling queue", its wording in 1.36) or, for a gang, while fewer than minCount of its pods exist
  ("waiting for minCount pods from a gang to appear in scheduling queue");
- Reserve/Unreserve: the members promised a node (reserved, not yet bound) are counted, with the bound ones;
- Permit: a member waits (5 minutes, upstream's permit timeout) until minCount members are reserved or bound
  ("waiting for minCount pods from a gang to be scheduled"), and its pending siblings are moved to the active
  queue to be tried next (``Handle.activate``); the one that completes the count lets the
  waiting ones go, and the PodGroup's condition ``PodGroupScheduled`` becomes True, reason ``Scheduled``;
- the end of a gang's attempt: once every pending member has been tried (placed and waiting, or found no
  node) without reaching minCount, the waiting members are turned away with kube-scheduler's message "pod
  group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins asked to
  wait and no plugin rejected pod", and the PodGroup's condition becomes False, reason ``Unschedulable``,
  message "pod group is unschedulable". Members no node fits keep their own FailedScheduling message.

How it differs inside: kube-scheduler 1.36 takes a gang's pending pods out of the queue together and tries
them one after another on one snapshot (its pod-group scheduling cycle, in the scheduler core). Here they are
tried one after another through the ordinary cycle, back to back as they were queued, and this plugin's
PostFilter and Permit see where the attempt ends: the same pods are tried in the same order against the same
reservations, so the same number fit and the same messages are written. A gang whose members wait for
different things (a backoff, a cluster change) is gathered again by the first one that reaches Permit.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Mapping
from typing import Any

from scheduler.framework import (
    ApiCallError,
    ClusterEvent,
    Code,
    CycleState,
    Handle,
    Plugin,
    Status,
)
from scheduler.model import PodInfo

log = logging.getLogger(__name__)

NAME = "GangScheduling"
PODGROUPS = "scheduling.k8s.io/v1alpha2/podgroups"
PODS = "v1/pods"
GROUP_FIELD = "spec.schedulingGroup.podGroupName"
CONDITION = "PodGroupScheduled"
PERMIT_TIMEOUT = 300.0  # kube-scheduler's permitTimeoutDuration for a gang member waiting at Permit
WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"
# kube-scheduler's RunPermitPlugins wording for a pod some plugin holds, without the pod's name.
PLUGINS_WAIT = "one or more plugins asked to wait and no plugin rejected pod"
GROUP_UNSCHEDULABLE = "pod group is unschedulable"
GANG_REJECTED = f"{GROUP_UNSCHEDULABLE}, {WAITING_AT_PERMIT}, {PLUGINS_WAIT}"


def pod_group_name(obj: Mapping[str, Any]) -> str | None:
    """The PodGroup a Pod object names in ``spec.schedulingGroup.podGroupName``, or None."""
    group = (obj.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) and name else None


def missing_group(name: str) -> str:
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


def min_count(group: Mapping[str, Any]) -> int | None:
    """A gang's minCount; None for a basic (or unset) policy."""
    policy = (group.get("spec") or {}).get("schedulingPolicy") or {}
    gang = policy.get("gang")
    if not isinstance(gang, Mapping):
        return None
    count = gang.get("minCount")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


# PodGroup fields of 1.36 alpha features kube-scheduler honours and this scheduler does not: a gang using one
# is refused, never placed as if the field were absent.
UNSUPPORTED_GROUP_FIELDS = (
    ("schedulingConstraints", "topology-aware workload scheduling (gate TopologyAwareWorkloadScheduling)"),
    ("resourceClaims", "PodGroup resource claims (gate DRAWorkloadResourceClaims)"),
)


def unsupported_fields(namespace: str, name: str, group: Mapping[str, Any]) -> Status | None:
    """A PodGroup asking for what this scheduler does not do, named by field: its members stay out of the queue."""
    spec = group.get("spec") or {}
    for field, feature in UNSUPPORTED_GROUP_FIELDS:
        if spec.get(field):
            why = (f"PodGroup {namespace}/{name}: spec.{field}: {feature} is not supported by this "
                   "scheduler; remove the field or leave this gang to kube-scheduler")
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (why,), NAME)
    return None


def _live(obj: Mapping[str, Any]) -> bool:
    return not (obj.get("metadata") or {}).get("deletionTimestamp") and \
        (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class GangScheduling:
    """The points of one profile: PreEnqueue, PostFilter, Reserve/Unreserve, Permit. Keeps, per gang
    ("namespace/name"), the members reserved and the members tried in the current attempt."""

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle
        self.reserved: dict[str, set[str]] = {}  # gang -> uids reserved (waiting at Permit, or binding)
        self.tried: dict[str, set[str]] = {}  # gang -> uids tried in its current attempt
        # Unreserve also runs on binder and timer threads; re-entrant: a rejection here unreserves at once.
        self._lock = threading.RLock()

    # -- reading the gang ---------------------------------------------------------------------------------
    def _group_name(self, pod: PodInfo) -> str | None:
        """The pod's PodGroup, from its object; a reserved pod's object is not kept (the cache drops it):
        then from the pod watch's copy of the same pod (same uid)."""
        try:
            obj: Mapping[str, Any] | None = pod.raw or None
        except LookupError:
            obj = None
        if obj is None:
            obj = self.handle.objects(PODS).get_object(pod.namespace, pod.name)
            if obj is None or (obj.get("metadata") or {}).get("uid", pod.uid) != pod.uid:
                return None
        return pod_group_name(obj)

    def _gang(self, pod: PodInfo) -> tuple[str, Mapping[str, Any] | None] | None:
        name = self._group_name(pod)
        if name is None:
            return None
        return name, self.handle.objects(PODGROUPS).get_object(pod.namespace, name)

    def _members(self, namespace: str, name: str) -> list[Mapping[str, Any]]:
        """The gang's live pods, pending or bound, as the scheduler's pod watch has them."""
        return [obj for obj in self.handle.objects(PODS).with_field(namespace, GROUP_FIELD, name) if _live(obj)]

    def _scheduled(self, namespace: str, name: str, members: list[Mapping[str, Any]]) -> int:
        """Members bound or reserved (kube-scheduler's ScheduledPodsCount: assumed or bound)."""
        bound = {_uid(obj) for obj in members if (obj.get("spec") or {}).get("nodeName")}
        alive = {_uid(obj) for obj in members}
        with self._lock:
            reserved = self.reserved.get(f"{namespace}/{name}")
            if reserved is None:
                return len(bound)
            reserved &= alive - bound  # bound ones are counted from the watch; deleted ones are gone
            return len(bound) + len(reserved)

    # -- the points ---------------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        found = self._gang(pod)
        if found is None:
            return None
        name, group = found
        if group is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          (missing_group(name),), NAME)
        refused = unsupported_fields(pod.namespace, name, group)
        if refused is not None:
            return refused
        wanted = min_count(group)
        if wanted is not None and len(self._members(pod.namespace, name)) < wanted:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_MEMBERS,), NAME)
        return None

    def post_filter(self, cycle: CycleState, pod: PodInfo, failures: Any) -> Status:
        """A member no node fits: it counts as tried; if it was the gang's last untried member, the attempt
        ends. Adds nothing to the message (kube-scheduler's pod keeps its filters' message)."""
        found = self._gang(pod)
        if found is not None and found[1] is not None and min_count(found[1]) is not None:
            name, group = found
            with self._lock:
                self.tried.setdefault(f"{pod.namespace}/{name}", set()).add(pod.uid)
            self._end_if_all_tried(pod.namespace, name, group, exclude="")
        return Status(Code.UNSCHEDULABLE)

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        name = self._group_name(pod)
        if name is not None:
            with self._lock:
                self.reserved.setdefault(f"{pod.namespace}/{name}", set()).add(pod.uid)
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        name = self._group_name(pod)
        if name is not None:
            with self._lock:
                self.reserved.get(f"{pod.namespace}/{name}", set()).discard(pod.uid)

    def permit(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        found = self._gang(pod)
        if found is None:
            return None
        name, group = found
        if group is None:  # deleted since PreEnqueue let the pod in: an error, retried with backoff
            why = f'failed to get podGroup {pod.namespace}/{name}: podgroups.scheduling.k8s.io "{name}" not found'
            return Status(Code.ERROR, (why,), NAME)
        wanted = min_count(group)
        if wanted is None:
            return None
        key = f"{pod.namespace}/{name}"
        members = self._members(pod.namespace, name)
        if self._scheduled(pod.namespace, name, members) < wanted:
            with self._lock:
                self.tried.setdefault(key, set()).add(pod.uid)
            if self._end_if_all_tried(pod.namespace, name, group, exclude=pod.uid):
                return Status(Code.UNSCHEDULABLE, (GANG_REJECTED,), NAME)
            # the members still pending are tried next, whatever they wait for (kube-scheduler activates them)
            self.handle.activate(f"{pod.namespace}/{(obj.get('metadata') or {}).get('name')}" for obj in members
                                 if not (obj.get("spec") or {}).get("nodeName") and _uid(obj) != pod.uid)
            return Status(Code.WAIT, (WAITING_AT_PERMIT,), NAME, timeout=PERMIT_TIMEOUT)
        with self._lock:
            self.tried.pop(key, None)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.namespace == pod.namespace and self._group_name(waiting.pod) == name:
                waiting.allow(NAME)
        self._set_condition(pod.namespace, name, group, "True", "Scheduled", "")
        return None

    # -- the end of an attempt ----------------------------------------------------------------------------
    def _end_if_all_tried(self, namespace: str, name: str, group: Mapping[str, Any], exclude: str) -> bool:
        """When every pending member has been tried in this attempt and fewer than minCount are placed: turn
        the waiting members away (all but ``exclude``, the pod whose Permit asks) and mark the PodGroup
        unschedulable. True when the attempt ended so."""
        key = f"{namespace}/{name}"
        members = self._members(namespace, name)
        with self._lock:
            tried = set(self.tried.get(key, ()))
        waiting = [w for w in self.handle.waiting_pods()
                   if w.pod.namespace == namespace and self._group_name(w.pod) == name]
        held = {w.pod.uid for w in waiting}
        untried = [obj for obj in members if not (obj.get("spec") or {}).get("nodeName")
                   and _uid(obj) not in tried and _uid(obj) not in held]
        if untried:
            return False
        with self._lock:
            self.tried.pop(key, None)
        if self._scheduled(namespace, name, members) >= (min_count(group) or 1):
            return False
        for w in waiting:
            if w.pod.uid != exclude:
                w.reject(NAME, GANG_REJECTED)
        self._set_condition(namespace, name, group, "False", "Unschedulable", GROUP_UNSCHEDULABLE)
        return True

    def _set_condition(self, namespace: str, name: str, group: Mapping[str, Any], status: str, reason: str,
                       message: str) -> None:
        """PodGroupScheduled through the status subresource, when it changes (as kube-scheduler writes it)."""
        conditions = list((group.get("status") or {}).get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == CONDITION), None)
        if current is not None and (current.get("status"), current.get("reason"), current.get("message", "")) == \
                (status, reason, message):
            return
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        changed = current is None or current.get("status") != status
        condition = {"type": CONDITION, "status": status, "reason": reason, "message": message,
                     "lastTransitionTime": now if changed else current.get("lastTransitionTime", now)}
        generation = (group.get("metadata") or {}).get("generation")
        if isinstance(generation, int):
            condition["observedGeneration"] = generation
        others = [c for c in conditions if c.get("type") != CONDITION]
        try:
            self.handle.api.patch_status(PODGROUPS, namespace, name, {"status": {"conditions": [*others, condition]}})
        except ApiCallError as err:  # the condition reports; the decision stands
            log.warning("PodGroup %s/%s: cannot write %s=%s: %s", namespace, name, CONDITION, status, err)


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


PLUGIN = Plugin(NAME, setup=GangScheduling, watches=(PODGROUPS, PODS), writes=(f"{PODGROUPS}/status",),
                requeue_on=ClusterEvent.ANY)
