"""One pod's scheduling cycle and the outcome of its binding (kube-scheduler's schedule_one.go).

Scheduling cycle (the loop thread, one pod at a time): the popped pod, still ours and not yet placed, is
decided by its profile's framework on the cache's snapshot; a chosen node is assumed in the cache at once
(the next decision already sees it taken) and the pod handed to the binder; a pod no node fits is
reported (FailedScheduling event, PodScheduled=False) and waits in the queue for the cluster events its
profile says may help (those its rejecting plugins declare), or, when its spec could not be read, for the
pod to change. Before that, DefaultPreemption (when the profile enables it, scheduler.framework.preemption) may evict
lower-priority pods and nominate the pod to their node; the pods nominated to a node count there for every
decision of a pod of lower or equal priority (scheduler.runtime.nominator).

With plugins at Reserve, Permit, PreBind, Bind (other than DefaultBinder) or PostBind (``Extensions``), the
chosen node is assumed, then Reserve and Permit run in the loop; a failure undoes the reservation (Unreserve
in reverse order, the assumption forgotten, FailedScheduling naming the plugin, the pod back in the queue).
A pod Permit holds waits in ``WaitingPods`` without blocking anything; once allowed it goes to the binder,
whose worker runs PreBind, Bind and PostBind (``_binding_cycle``). A failure there, a rejection or a Permit
timeout undoes the reservation the same way. Nothing is bound half-way.

Binding outcome (binder threads): bound -> the cache starts waiting for the watch to confirm it and a
Scheduled event is written; the pod gone, re-created or assigned, as read again after the refusal
(scheduler.runtime.binder.judge_refusal) -> dropped; still unassigned, or not readable -> the assumption
is forgotten and the pod retried with backoff; a binding cancelled before it was sent (leadership ended)
-> the assumption is forgotten and the pod waits in the queue for the next leader.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Mapping

from scheduler.framework import (
    ClusterView,
    Code,
    CycleState,
    Extensions,
    Nominated,
    Profile,
    ScheduleResult,
    Status,
)
from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.post_filter import run_post_filters
from scheduler.framework.waiting import WaitingPod, WaitingPods
from scheduler.model import PodInfo, PodSpecError
from scheduler.runtime.binder import Binder, BindOutcome, BindResult
from scheduler.runtime.budgets import DisruptionBudgets
from scheduler.runtime.cache import Cache, Snapshot
from scheduler.runtime.client import ApiError, Client
from scheduler.runtime.events import EventRecorder
from scheduler.runtime.handle import RuntimeHandle
from scheduler.runtime.metrics import Metrics
from scheduler.runtime.nominator import Nominator
from scheduler.runtime.pending import PendingPods
from scheduler.runtime.preemption_api import PreemptionApi
from scheduler.runtime.queue import QueuedPod, SchedulingQueue

log = logging.getLogger(__name__)


class SchedulingCycle:
    """Decides one popped pod at a time and handles what its binding came to. Only the loop thread calls
    ``schedule_one``; binder threads call ``binding_done``."""

    def __init__(self, client: Client, profiles: Mapping[str, Profile], cache: Cache, queue: SchedulingQueue,
                 pending: PendingPods, recorder: EventRecorder, metrics: Metrics, rng: random.Random, *,
                 bind_workers: int, nominator: Nominator, budgets: DisruptionBudgets,
                 extensions: Mapping[str, Extensions], handles: Mapping[str, RuntimeHandle],
                 waiting: WaitingPods, kinds: Mapping[str, object]) -> None:
        self.profiles = profiles
        self.extensions = extensions
        self.handles = handles
        self.waiting = waiting
        self.kinds = kinds  # the watched kinds' stores, handed to plugins through the cycle's ClusterView
        self.cache = cache
        self.queue = queue
        self.pending = pending
        self.recorder = recorder
        self.metrics = metrics
        self.rng = rng
        self.nominator = nominator
        self.budgets = budgets
        self.preemption = PreemptionApi(client, recorder, nominator)
        self.binder = Binder(client, self.binding_done, workers=bind_workers)
        # uid -> (queued pod, profile, feasible nodes, evaluated nodes, cycle state or None) of each pod reserved
        # (waiting at Permit) or handed to the binder
        self._binding: dict[str, tuple[QueuedPod, str, int, int, CycleState | None]] = {}
        self._count_lock = threading.Lock()
        self.scheduled_count = 0  # pods bound

    def schedule_one(self, qp: QueuedPod) -> None:
        pod = qp.pod
        if not self.pending.contains(pod) or self.cache.has_pod(pod.uid):
            self.queue.done(pod.key)  # deleted, bound elsewhere, or already decided
            return
        profile_name = pod.scheduler_name
        profile = self.profiles[profile_name]
        start = time.perf_counter()
        if pod.spec_error is not None:  # a malformed quantity, toleration or affinity
            self._invalid_spec(qp, pod.spec_error, start)
            return
        try:
            snap = self.cache.snapshot()
            cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, self.cache.volumes, snap.traits,
                                  kinds=self.kinds)
            nominated = self.nominator.for_pod(pod)
            result = profile.schedule(pod, snap.nodes, self.rng, cluster, nominated)
            message = result.message
            if result.node_name is None:
                message = self._post_filter(pod, profile, result, snap, cluster, nominated)
        except PodSpecError as err:  # e.g. a malformed annotation a plugin reads
            self._invalid_spec(qp, err, start)
            return
        except ApiError as err:  # a victim could not be evicted: try again after backoff
            self._observe(start, "error", profile_name)
            log.warning("pod %s: preemption failed: %s; retrying with backoff", pod.key, err)
            self.queue.failed(qp, unschedulable=False)
            return
        except Exception as err:  # a plugin raised: its pod fails with an event naming it; the loop goes on
            status = profile.raised(err)
            self._observe(start, "error", profile_name)
            log.exception("pod %s: %s", pod.key, status.reason)
            self.recorder.failed(pod, status.reason, profile_name)
            self.queue.failed(qp, unschedulable=False)
            return
        node = result.node_name
        if node is None:
            self._observe(start, "unschedulable", profile_name)
            log.info("pod %s unschedulable: %s", pod.key, message)
            _log_verdicts(pod, result)
            self.recorder.failed(pod, message, profile_name)
            self.queue.failed(qp, unschedulable=True, requeue_on=profile.requeue_triggers(result.rejected_by),
                              requeue_fields=profile.requeue_fields(result.rejected_by),
                              requeue_kinds=profile.requeue_kinds(result.rejected_by))
            return
        try:
            assumed = self.cache.assume(pod, node)
        except (KeyError, ValueError) as err:
            self._observe(start, "error", profile_name)
            log.warning("pod %s: cannot assume on %s: %s", pod.key, node, err)
            self.queue.failed(qp, unschedulable=False)
            return
        extensions = self.extensions[profile_name]
        if extensions.binding_points_for(assumed):
            self._reserve_and_permit(qp, extensions, assumed, node, cluster, result, start)
            return
        self._decided(qp, result, start, None)
        self.binder.submit(assumed, node)

    def _decided(self, qp: QueuedPod, result: ScheduleResult, start: float, cycle: CycleState | None) -> None:
        """The pod leaves the queue decided: no longer nominated, its attempt counted, kept for its binding."""
        pod = qp.pod
        self.queue.done(pod.key)
        self.nominator.remove(pod.uid)
        self._observe(start, "scheduled", pod.scheduler_name)
        _log_verdicts(pod, result)
        self._binding[pod.uid] = (qp, pod.scheduler_name, len(result.feasible_nodes), result.evaluated_nodes, cycle)

    def _reserve_and_permit(self, qp: QueuedPod, extensions: Extensions, assumed: PodInfo, node: str,
                            cluster: ClusterView, result: ScheduleResult, start: float) -> None:
        """Reserve, then Permit, for a pod assumed on ``node``: on a failure the reservation is undone and
        the pod goes back to the queue; otherwise it is bound at once, or waits for Permit's plugins."""
        pod, profile_name = qp.pod, qp.pod.scheduler_name
        cycle = CycleState(cluster, node)
        status = extensions.reserve(cycle, assumed, node)
        waits: dict[str, float] = {}
        if status is None:
            permit = extensions.permit(cycle, assumed, node)
            status, waits = permit.rejection, permit.waits
        if status is not None:
            extensions.unreserve(cycle, assumed, node)
            self.cache.forget(pod.uid)
            self._observe(start, "error" if status.code is Code.ERROR else "unschedulable", profile_name)
            log.info("pod %s not reserved on %s: %s (%s)", pod.key, node, status.reason, status.plugin)
            self.recorder.failed(pod, status.reason, profile_name)
            self._requeue_after_plugin(qp, pod, profile_name, status)
            return
        self._decided(qp, result, start, cycle)
        if waits:
            log.info("pod %s reserved on %s, waiting at Permit for %s", pod.key, node, ", ".join(sorted(waits)))
            self.waiting.add(assumed, node, waits, self._permit_settled)
        else:
            self.binder.submit(assumed, node, self._binding_cycle)

    def _requeue_after_plugin(self, qp: QueuedPod | None, pod: PodInfo, profile_name: str, status: Status) -> None:
        """Back to the queue after a plugin refused the pod past the filters: an error retries after backoff, a
        rejection waits for any cluster change or a change of the refusing plugin's watched kinds."""
        if qp is None or not self.pending.contains(pod):
            return
        qp.pod = _without_node(pod)
        if status.code is Code.ERROR:
            self.queue.failed(qp, unschedulable=False)
        else:
            self.queue.failed(qp, unschedulable=True, requeue_on=ClusterEvent.ANY,
                              requeue_kinds=self.profiles[profile_name].requeue_kinds((status.plugin,)))

    def _permit_settled(self, waiting: WaitingPod, status: Status) -> None:
        """A pod held at Permit was allowed (bind it), rejected or timed out (undo it). Any thread."""
        pod, node = waiting.pod, waiting.node
        if status.ok:
            self.binder.submit(pod, node, self._binding_cycle)
            return
        qp, profile_name = self._undo(pod, node)
        log.info("pod %s not bound to %s: %s (%s)", pod.key, node, status.reason, status.plugin)
        if self.pending.contains(pod):  # not about a pod deleted while it waited
            self.recorder.failed(pod, status.reason, profile_name)
        self._requeue_after_plugin(qp, pod, profile_name, status)

    def _undo(self, pod: PodInfo, node: str) -> tuple[QueuedPod | None, str]:
        """A reserved pod will not be bound: Unreserve in reverse, the assumption forgotten; its queue entry and
        profile are returned for the requeue."""
        qp, profile_name, _, _, cycle = self._binding.pop(pod.uid, (None, pod.scheduler_name, 0, 0, None))
        self.extensions[profile_name].unreserve(cycle or CycleState(None, node), pod, node)
        self.cache.forget(pod.uid)
        return qp, profile_name

    def release_waiting(self) -> None:
        """Leadership ended: every pod held at Permit is let go unbound, its reservation undone, and waits in
        the queue for whoever leads next."""
        for waiting in self.waiting.cancel_all():
            pod, node = waiting.pod, waiting.node
            qp, _ = self._undo(pod, node)
            self._requeue(qp, pod)

    def _binding_cycle(self, pod: PodInfo, node: str, halt: threading.Event) -> BindResult:
        """PreBind, Bind and PostBind of a reserved pod, on a binder worker (kube-scheduler's bindingCycle).
        Nothing is sent once leadership has ended."""
        begin = time.perf_counter()
        entry = self._binding.get(pod.uid)
        profile_name = entry[1] if entry else pod.scheduler_name
        cycle = (entry[4] if entry else None) or CycleState(None, node)
        extensions, handle = self.extensions[profile_name], self.handles[profile_name]

        def ended(outcome: BindOutcome, status: Status | None = None) -> BindResult:
            return BindResult(pod, node, outcome, time.perf_counter() - begin, status=status)

        if halt.is_set():
            return ended(BindOutcome.CANCELLED)
        status = extensions.pre_bind(cycle, pod, node)
        if status is not None:
            return ended(BindOutcome.REJECTED, status)
        if halt.is_set():
            return ended(BindOutcome.CANCELLED)
        handle.halt = halt
        status = extensions.bind(cycle, pod, node)
        posted = handle.binding_result(pod.uid)  # DefaultBinder's POST, when it was the one that bound
        if not status.ok:
            return posted if posted is not None else ended(BindOutcome.REJECTED, status)
        extensions.post_bind(cycle, pod, node)
        return posted if posted is not None else ended(BindOutcome.BOUND)

    def _post_filter(self, pod: PodInfo, profile: Profile, result: ScheduleResult, snap: Snapshot,
                     cluster: ClusterView, nominated: Nominated) -> str:
        """The PostFilter plugins for a pod no node fits (``run_post_filters``); returns the FailedScheduling
        message. When preemption found room the victims are deleted and the pod nominated: it waits in the
        queue for them to go (a deleted pod is an event NodeResourcesFit and the other resource filters wait
        for)."""
        nominated_to = self.nominator.node_of(pod.uid)  # set by an earlier cycle, maybe not yet seen in status
        if nominated_to and nominated_to != pod.nominated_node_name:
            pod = dataclasses.replace(pod, nominated_node_name=nominated_to)
        post = run_post_filters(profile, pod, result, snap.nodes, cluster, self.budgets.all(), nominated, self.rng,
                                self.extensions[profile.scheduler_name])
        outcome = post.preemption
        if outcome is None:
            return post.message
        self.metrics.preemption_attempts.inc()
        if outcome.node is None:
            if outcome.clear_nomination:
                self.preemption.clear_nomination(pod)
            return post.message
        self.metrics.preemption_victims.observe(len(outcome.victims))
        self.preemption.carry_out(pod, outcome, profile.scheduler_name)
        return post.message

    def _invalid_spec(self, qp: QueuedPod, err: PodSpecError, start: float) -> None:
        pod = qp.pod
        self._observe(start, "error", pod.scheduler_name)
        message = f"invalid pod spec: {err.field}: {err.reason}"
        log.warning("pod %s: %s", pod.key, message)
        self.recorder.failed(pod, message, pod.scheduler_name)
        # No cluster event can mend a pod's own spec: it waits for the pod to change.
        self.queue.failed(qp, unschedulable=True, requeue_on=ClusterEvent.POD_UPDATED)

    def requeue_expired(self) -> None:
        """Assumed pods whose binding was never seen through the watch: placed again if still ours."""
        for pod in self.cache.cleanup():
            if self.pending.contains(pod):
                self.queue.add(_without_node(pod))

    def _observe(self, start: float, result: str, profile: str) -> None:
        self.metrics.attempts.labels(result, profile).inc()
        self.metrics.attempt_duration.labels(result, profile).observe(time.perf_counter() - start)

    def binding_done(self, res: BindResult) -> None:
        pod = res.pod
        qp, profile_name, feasible, evaluated, cycle = self._binding.pop(pod.uid,
                                                                         (None, pod.scheduler_name, 0, 0, None))
        self.metrics.binding_duration.labels(res.outcome.value).observe(res.seconds)
        if res.outcome is BindOutcome.BOUND:
            # Logged once bound, by the binder thread, as kube-scheduler logs "Successfully bound pod to node"
            # (at V(2)): the scheduling loop, which decides one pod at a time, does not format it (~10% of a
            # decision at 1,000 nodes in-process). The scores behind the choice are logged at debug only.
            log.info("pod %s scheduled to %s (%d feasible of %d evaluated)", pod.key, res.node, feasible, evaluated)
            self.cache.finish_binding(pod.uid)
            with self._count_lock:
                self.scheduled_count += 1
            if qp is not None:
                self.metrics.e2e_duration.labels(str(min(qp.attempts, 16))).observe(
                    max(time.monotonic() - qp.initial_attempt_at, 0.0)
                )
            self.recorder.scheduled(pod, res.node, profile_name)
            return
        if cycle is not None:  # reserved by plugins: undo it, in reverse order
            self.extensions[profile_name].unreserve(cycle, pod, res.node)
        self.cache.forget(pod.uid)
        if res.outcome is BindOutcome.CANCELLED:
            # Never sent (leadership ended): the pod waits in the queue for whoever leads next.
            log.info("pod %s: binding to %s cancelled (no longer leading)", pod.key, res.node)
            self._requeue(qp, pod)
            return
        if res.outcome is BindOutcome.REJECTED and res.status is not None:
            log.warning("pod %s not bound to %s: %s", pod.key, res.node, res.status.reason)
            self.recorder.failed(pod, res.status.reason, profile_name)
            self._requeue(qp, pod)
            return
        err = res.error
        if res.outcome in (BindOutcome.GONE, BindOutcome.CONFLICT):
            # Deleted, re-created with a new UID, or assigned, as the pod read after the refusal showed:
            # nothing left to do for this pod object; a new one arrives through the watch on its own.
            log.info("pod %s not bound to %s: %s (dropped)", pod.key, res.node, err.message if err else "")
            self.pending.drop(pod.key, pod.uid)
            return
        log.warning("binding %s to %s failed: %s; retrying with backoff", pod.key, res.node, err)
        self.recorder.failed(
            pod,
            f"Binding rejected: {err.message if err else 'unknown error'}",
            profile_name,
            reason="SchedulerError",
        )
        self._requeue(qp, pod)

    def _requeue(self, qp: QueuedPod | None, pod: PodInfo) -> None:
        """Back to the queue (with backoff) to be placed again, if the pod is still ours to place."""
        if qp is not None and self.pending.contains(pod):
            qp.pod = _without_node(pod)
            self.queue.failed(qp, unschedulable=False)


def _without_node(pod: PodInfo) -> PodInfo:
    """The pod as still to be placed (an assumed copy carries the node it was assumed on)."""
    return dataclasses.replace(pod, node_name=None)


def _log_verdicts(pod: PodInfo, result: ScheduleResult) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    log.debug("pod %s: %s", pod.key, result.explain())
    for node, status in result.failures.items():
        log.debug(
            "pod %s: node %s rejected by %s: %s", pod.key, node, status.plugin or "filter", status.reason
        )
    for node in result.feasible_nodes:
        log.debug("pod %s: node %s feasible, scores %s", pod.key, node, result.node_scores(node) or "-")
