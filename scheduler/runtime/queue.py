"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler's PriorityQueue.

- active: ordered by priority (high first), then by the time the pod entered the queue (FIFO).
- backoff: pods that failed recently wait 1 s, doubling per attempt up to 10 s, then go to active.
- unschedulable: pods no node could take. Each waits for the cluster events that may help it
  (``scheduler.framework.cluster_event``), as the scheduling cycle hands them over with the failure: what the
  plugins that rejected it declare (events, and fields by path), or, when its spec could not be read, a
  change of the pod itself.
  Such an event (an update of the pod included), or `unschedulable_timeout` (kube-scheduler's
  podMaxInUnschedulablePodsDuration; 5 min there, 60 s here so a lab sees the retry), moves it on: to
  backoff if its backoff has not expired yet, else to active.
- gated: pods a PreEnqueue plugin keeps out of the active queue (a gang not yet complete), with its Status;
  they are asked again whenever they would enter the active queue, and on ``retry_gated`` (any pod added,
  a watched kind changed, and once a second).
- The active queue's order is the profile's QueueSort (``sort_key``; default PrioritySort's).
- One entry per pod key (namespace/name): adding a pod already queued replaces its object.
- A pod being scheduled ("in flight") is not queued twice; if a cluster event happened while it was in
  flight and it then fails, it goes to backoff rather than unschedulable, so the event is not missed
  (kube-scheduler's moveRequestCycle).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import Status, priority_sort_key
from scheduler.framework.cluster_event import (
    NO_FIELDS,
    ClusterEvent,
    RequeueFields,
    changed_fields,
    pod_change,
)
from scheduler.model import PodInfo
from scheduler.model.raw import FieldPath

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT, GATED = "active", "backoff", "unschedulable", "in_flight", "gated"

SortKey = Callable[[PodInfo, float], Any]
PreEnqueue = Callable[[PodInfo], "Status | None"]


@dataclass(slots=True)
class QueuedPod:
    pod: PodInfo
    attempts: int = 0
    added_at: float = 0.0  # when it last entered the queue (FIFO order)
    initial_attempt_at: float = 0.0
    failed_at: float = 0.0  # when the last attempt failed (backoff start)
    cycle: int = 0  # scheduling cycle in which it was popped
    where: str = ACTIVE
    deleted: bool = False
    seq: int = field(default=0)
    successor: PodInfo | None = None  # a re-created pod (same key, new uid) that arrived while in flight
    requeue_on: ClusterEvent = ClusterEvent.ANY  # while unschedulable: the events that may help it
    requeue_fields: RequeueFields = NO_FIELDS  # ... and the fields read through raw that may
    requeue_kinds: frozenset[str] = frozenset()  # ... and the watched kinds whose change may
    gate: Status | None = None  # while gated: the PreEnqueue plugin's status


class SchedulingQueue:
    def __init__(
        self,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_timeout: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sort_key: SortKey = priority_sort_key,
        pre_enqueue: PreEnqueue | None = None,
    ) -> None:
        self.sort_key = sort_key
        self.pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: dict[str, QueuedPod] = {}
        self._active: list[tuple[Any, int, str]] = []  # (sort_key(pod, added_at), seq, key)
        self._gated: dict[str, QueuedPod] = {}
        self._backoff: list[tuple[float, int, str]] = []  # (ready_at, seq, key)
        # Unschedulable pods in the order they failed, so the timeout flush stops at the first young one.
        self._unschedulable: dict[str, QueuedPod] = {}
        self._seq = itertools.count()
        self._cycle = 0
        self._move_request_cycle = -1
        self._closed = False

    # -- state -----------------------------------------------------------------------------------
    def backoff_duration(self, attempts: int) -> float:
        if attempts <= 0:
            return 0.0
        return min(self.initial_backoff * (2 ** (attempts - 1)), self.max_backoff)

    def _backoff_expiry(self, qp: QueuedPod) -> float:
        return qp.failed_at + self.backoff_duration(qp.attempts)

    def counts(self) -> dict[str, int]:
        with self._cond:
            out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0, GATED: 0}
            for qp in self._entries.values():
                out[qp.where] += 1
            return out

    def __contains__(self, key: str) -> bool:
        with self._cond:
            return key in self._entries

    def where(self, key: str) -> str | None:
        with self._cond:
            qp = self._entries.get(key)
            return qp.where if qp else None

    def gated(self) -> list[tuple[PodInfo, Status]]:
        """The pods a PreEnqueue plugin keeps out of the active queue, with its status."""
        with self._cond:
            return [(qp.pod, qp.gate) for qp in self._gated.values() if qp.gate is not None]

    # -- internal moves (lock held) --------------------------------------------------------------
    def _push_active(self, qp: QueuedPod) -> None:
        """Into the active queue, unless a PreEnqueue plugin says the pod may not be tried yet."""
        if self.pre_enqueue is not None:
            gate = self.pre_enqueue(qp.pod)
            if gate is not None:
                qp.where, qp.gate = GATED, gate
                self._gated[qp.pod.key] = qp
                return
            if qp.gate is not None:
                qp.gate = None
                self._gated.pop(qp.pod.key, None)
        qp.where = ACTIVE
        qp.seq = next(self._seq)
        heapq.heappush(self._active, (self.sort_key(qp.pod, qp.added_at), qp.seq, qp.pod.key))
        self._cond.notify()

    def _push_backoff(self, qp: QueuedPod) -> None:
        qp.where = BACKOFF
        qp.seq = next(self._seq)
        heapq.heappush(self._backoff, (self._backoff_expiry(qp), qp.seq, qp.pod.key))
        self._cond.notify()

    def _requeue(self, qp: QueuedPod, now: float) -> None:
        """Move a waiting pod on: to backoff if its backoff is still running, else to active."""
        self._unschedulable.pop(qp.pod.key, None)
        qp.added_at = now
        if self._backoff_expiry(qp) > now:
            self._push_backoff(qp)
        else:
            self._push_active(qp)

    def _flush(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, key = heapq.heappop(self._backoff)
            qp = self._entries.get(key)
            if qp is not None and qp.where == BACKOFF and qp.seq == seq:
                qp.added_at = now
                self._push_active(qp)
        due = []
        for qp in self._unschedulable.values():
            if now - qp.failed_at < self.unschedulable_timeout:
                break
            due.append(qp)
        for qp in due:
            self._requeue(qp, now)

    # -- producers -------------------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A pending pod was added or changed (informer). New pods go to active; known ones get the new
        object, and an unschedulable one is retried if the change is one that may help it."""
        with self._cond:
            now = self._clock()
            qp = self._entries.get(pod.key)
            if qp is None:
                qp = QueuedPod(pod=pod, added_at=now, initial_attempt_at=now)
                self._entries[pod.key] = qp
                self._push_active(qp)
                return
            if qp.where == IN_FLIGHT and qp.pod.uid != pod.uid:
                qp.successor = pod  # queued fresh once the cycle lets go of the old one
                return
            old, qp.pod = qp.pod, pod
            qp.deleted = False
            if qp.where == GATED:
                self._push_active(qp)
                return
            # Status-only updates (our own PodScheduled condition) change nothing and do not retry the pod.
            if qp.where == UNSCHEDULABLE and (pod_change(old, pod) & qp.requeue_on or changed_fields(
                    qp.requeue_fields.pod, old._raw, pod._raw)):
                self._requeue(qp, now)

    def delete(self, key: str) -> None:
        with self._cond:
            qp = self._entries.get(key)
            if qp is None:
                return
            if qp.where == IN_FLIGHT:
                qp.deleted = True  # the cycle still holds it; done()/failed() will drop it
            else:
                del self._entries[key]  # stale heap items are skipped by seq/where checks
                self._unschedulable.pop(key, None)
                self._gated.pop(key, None)

    def move_for(self, event: ClusterEvent, node_fields: frozenset[FieldPath] = frozenset()) -> None:
        """A node added or changed (``node_fields``: the declared fields of it that changed), or a bound pod
        gone: retry the unschedulable pods it may help."""
        with self._cond:
            now = self._clock()
            self._move_request_cycle = self._cycle
            for qp in [qp for qp in self._unschedulable.values()
                       if qp.requeue_on & event or not node_fields.isdisjoint(qp.requeue_fields.node)]:
                self._requeue(qp, now)

    def move_for_kind(self, resource: str) -> None:
        """An object of a watched kind changed: retry the unschedulable pods whose rejecting plugins watch it,
        and ask the PreEnqueue plugins again about the gated pods."""
        with self._cond:
            now = self._clock()
            self._move_request_cycle = self._cycle
            for qp in [qp for qp in self._unschedulable.values() if resource in qp.requeue_kinds]:
                self._requeue(qp, now)
            self._retry_gated(now)

    def activate(self, keys: list[str]) -> None:
        """A plugin asks for these pods to be tried next (kube-scheduler's Activate): from backoff or from
        waiting for a change into the active queue; gated, in-flight and unknown pods are left alone."""
        with self._cond:
            now = self._clock()
            for key in keys:
                qp = self._entries.get(key)
                if qp is not None and qp.where in (BACKOFF, UNSCHEDULABLE):
                    self._unschedulable.pop(key, None)
                    qp.added_at = now
                    self._push_active(qp)

    def retry_gated(self) -> None:
        """Ask the PreEnqueue plugins again about every gated pod (something they may read has changed). With
        none gated (the common case: called for every pod added) the queue's lock is not taken; a pod gated
        meanwhile is asked again on the next change or within a second."""
        if not self._gated:
            return
        with self._cond:
            self._retry_gated(self._clock())

    def _retry_gated(self, now: float) -> None:
        for qp in list(self._gated.values()):
            if self._entries.get(qp.pod.key) is qp and qp.where == GATED:
                qp.added_at = now
                self._push_active(qp)
            else:
                self._gated.pop(qp.pod.key, None)

    # -- consumer --------------------------------------------------------------------------------
    def pop(self, timeout: float | None = None) -> QueuedPod | None:
        """The next pod to schedule, or None on timeout/close. Marks it in flight."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = self._clock()
                self._flush(now)
                while self._active:
                    _, seq, key = heapq.heappop(self._active)
                    qp = self._entries.get(key)
                    if qp is None or qp.where != ACTIVE or qp.seq != seq:
                        continue
                    self._cycle += 1
                    qp.cycle = self._cycle
                    qp.attempts += 1
                    qp.where = IN_FLIGHT
                    return qp
                wait = 1.0  # also bounds the unschedulable-timeout check interval
                if self._backoff:
                    wait = min(wait, max(self._backoff[0][0] - now, 0.0))
                if deadline is not None:
                    if now >= deadline:
                        return None
                    wait = min(wait, deadline - now)
                self._cond.wait(wait)

    def done(self, key: str) -> None:
        """The in-flight pod was assumed (or is no longer ours): forget it."""
        with self._cond:
            qp = self._entries.get(key)
            if qp is not None and qp.where == IN_FLIGHT:
                del self._entries[key]
                self._start_successor(qp)

    def _start_successor(self, qp: QueuedPod) -> None:
        if qp.successor is not None:
            now = self._clock()
            fresh = QueuedPod(pod=qp.successor, added_at=now, initial_attempt_at=now)
            self._entries[fresh.pod.key] = fresh
            self._push_active(fresh)

    def failed(
        self, qp: QueuedPod, *, unschedulable: bool, requeue_on: ClusterEvent = ClusterEvent.ANY,
        requeue_fields: RequeueFields = NO_FIELDS, requeue_kinds: frozenset[str] = frozenset(),
    ) -> None:
        """The attempt failed. `unschedulable`: no node fits (wait for one of the `requeue_on` events, or a
        change of one of the `requeue_fields`); otherwise an error (bind failure, API error) retried after
        backoff."""
        with self._cond:
            key = qp.pod.key
            cur = self._entries.get(key)
            if cur is None:
                # Bind failures arrive after done(): the pod re-enters with its attempt history.
                cur = qp
                self._entries[key] = cur
            if cur.deleted or cur.successor is not None:
                del self._entries[key]
                self._start_successor(cur)
                return
            now = self._clock()
            cur.failed_at = now
            cur.added_at = now
            if unschedulable and self._move_request_cycle < cur.cycle:
                cur.where = UNSCHEDULABLE
                cur.requeue_on = requeue_on
                cur.requeue_fields = requeue_fields
                cur.requeue_kinds = requeue_kinds
                self._unschedulable.pop(key, None)
                self._unschedulable[key] = cur
            else:
                self._push_backoff(cur)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
