"""Events (events.k8s.io/v1) and the PodScheduled condition, written off the scheduling loop.

Shapes follow kube-scheduler:
- Scheduled:        type Normal,  action "Binding",    note "Successfully assigned ns/pod to node"
- FailedScheduling: type Warning, action "Scheduling", note the framework's "0/N nodes are available: ..."
- Preempted:        type Normal,  action "Preempting", note "Preempted by pod <preemptor uid> on node <node>",
                    regarding the victim, related the preemptor (kube-scheduler's preemption.go)
- reportingController is the profile's schedulerName (kube-scheduler reports "default-scheduler"),
  reportingInstance "<controller>-<hostname>", event name "<pod>.<unix nanos in hex>" as client-go names it.
- An unschedulable pod gets status.conditions PodScheduled=False, reason Unschedulable, through a
  strategic merge patch of the status subresource (conditions merge by `type`, so other conditions stay).
  The patch carries the pod's metadata.uid, so it is refused by a pod re-created under the same name
  instead of landing on it; a patch still queued when the pod is bound or deleted is not sent; a refused
  one is judged by the pod as it now is (scheduler.runtime.pod_state.write_about): dropped when the pod is
  gone or assigned, tried again a few times otherwise. Events name the pod's uid (regarding.uid).

Writes go through a small worker pool fed by a bounded queue: a slow API server delays events, never
scheduling. When the queue is full, events are dropped, as client-go's broadcaster drops them (its queue
also holds 1,000). client-go drops silently; here the first drop is logged at once and later ones are
summed into one line at most every `drop_log_interval` seconds, so a burst does not flood the log with a
line per dropped event. `EventRecorder.dropped` counts every drop.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from scheduler.runtime.client import ApiError, Client, describe_forbidden, pod_path
from scheduler.runtime.leader import micro_time
from scheduler.runtime.pod_state import uid_guard, write_about

log = logging.getLogger(__name__)

NOTE_LIMIT = 1024  # events.k8s.io/v1 validation: note must be at most 1 kB
INSTANCE_LIMIT = 128  # reportingInstance, action and reason: at most 128 characters


def _rfc3339(ts: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if ts is None else ts))


def pod_reference(pod: Any) -> dict[str, str]:
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
    if getattr(pod, "resource_version", ""):
        ref["resourceVersion"] = pod.resource_version
    return ref


def event_body(
    pod: Any,
    *,
    controller: str,
    instance: str,
    reason: str,
    action: str,
    note: str,
    type_: str,
    now: float | None = None,
    related: Any = None,
) -> dict[str, Any]:
    now = time.time() if now is None else now
    if len(note.encode()) > NOTE_LIMIT:
        note = note.encode()[: NOTE_LIMIT - 3].decode("utf-8", "ignore") + "..."
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{pod.name}.{int(now * 1e9):x}", "namespace": pod.namespace},
        "eventTime": micro_time(now),
        "reportingController": controller,
        "reportingInstance": instance[:INSTANCE_LIMIT],
        "action": action,
        "reason": reason,
        "type": type_,
        "note": note,
        "regarding": pod_reference(pod),
    }
    if related is not None:
        body["related"] = pod_reference(related)
    return body


def unschedulable_condition_patch(message: str, reason: str = "Unschedulable") -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": _rfc3339(),
                }
            ]
        }
    }


class EventRecorder:
    def __init__(
        self,
        client: Client,
        *,
        workers: int = 4,
        capacity: int = 1000,
        hostname: str | None = None,
        drop_log_interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.hostname = hostname or socket.gethostname()
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue(capacity)
        self._conditions: dict[str, str] = {}  # pod uid -> last condition message written
        self._lock = threading.Lock()
        self.dropped = 0  # events and condition patches dropped because the queue was full, in total
        self._unlogged_drops = 0  # dropped since the last log line about drops
        self._drops_logged_at: float | None = None  # clock() of that line
        self._drop_log_interval = drop_log_interval
        self._clock = clock
        self._threads = [
            threading.Thread(target=self._work, name=f"events-{i}", daemon=True) for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    # -- public API ------------------------------------------------------------------------------
    def scheduled(self, pod: Any, node: str, controller: str) -> None:
        with self._lock:
            self._conditions.pop(pod.uid, None)
        self._submit(
            lambda: self._post_event(
                pod,
                controller,
                "Scheduled",
                "Binding",
                f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
                "Normal",
            )
        )

    def preempted(self, victim: Any, preemptor: Any, node: str, controller: str) -> None:
        """The Preempted event on a victim, naming the preemptor's uid as kube-scheduler does."""
        self._submit(lambda: self._post_event(
            victim, controller, "Preempted", "Preempting", f"Preempted by pod {preemptor.uid} on node {node}",
            "Normal", related=preemptor))

    def failed(self, pod: Any, message: str, controller: str, *, reason: str = "Unschedulable") -> None:
        """FailedScheduling event, plus the PodScheduled=False condition unless already written as is."""
        self._submit(
            lambda: self._post_event(pod, controller, "FailedScheduling", "Scheduling", message, "Warning")
        )
        with self._lock:
            if self._conditions.get(pod.uid) == message:
                return
            self._conditions[pod.uid] = message
        self._submit(lambda: self._patch_condition(pod, message, reason))

    def forget(self, uid: str) -> None:
        with self._lock:
            self._conditions.pop(uid, None)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until queued writes are done (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self) -> None:
        self.flush(5.0)
        self._log_drops(final=True)
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass

    # -- workers ---------------------------------------------------------------------------------
    def _submit(self, job: Callable[[], None]) -> None:
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            with self._lock:
                self.dropped += 1
                self._unlogged_drops += 1
            self._log_drops()

    def _log_drops(self, final: bool = False) -> None:
        """Log drops not yet logged: the first at once, then a sum at most every drop_log_interval s."""
        now = self._clock()
        with self._lock:
            n, last, total = self._unlogged_drops, self._drops_logged_at, self.dropped
            if n == 0 or (not final and last is not None and now - last < self._drop_log_interval):
                return
            self._unlogged_drops = 0
            self._drops_logged_at = now
        if last is None:
            log.warning(
                "event queue full (%d): dropped %d event(s); further drops are logged as a sum at most "
                "every %gs",
                self._queue.maxsize,
                n,
                self._drop_log_interval,
            )
        else:
            log.warning(
                "event queue full (%d): dropped %d more event(s) in the last %.1fs (%d in total)",
                self._queue.maxsize,
                n,
                now - last,
                total,
            )

    def _work(self) -> None:
        while True:
            try:
                # Waking when idle lets the drops of a burst that has ended be logged within the interval.
                job = self._queue.get(timeout=self._drop_log_interval)
            except queue.Empty:
                self._log_drops()
                continue
            try:
                if job is None:
                    return
                job()
            except Exception:  # a worker must survive anything one write does
                log.exception("writing an event failed")
            finally:
                self._queue.task_done()

    def _post_event(self, pod: Any, controller: str, reason: str, action: str, note: str, type_: str,
                    related: Any = None) -> None:
        body = event_body(
            pod,
            controller=controller,
            instance=f"{controller}-{self.hostname}",
            reason=reason,
            action=action,
            note=note,
            type_=type_,
            related=related,
        )
        try:
            self.client.post(f"/apis/events.k8s.io/v1/namespaces/{pod.namespace}/events", body, read_answer=False)
        except ApiError as err:
            if err.status == 403:
                log.error(describe_forbidden(err, "create", "events.events.k8s.io"))
            else:
                log.warning("event %s for %s/%s not recorded: %s", reason, pod.namespace, pod.name, err)

    def _patch_condition(self, pod: Any, message: str, reason: str) -> None:
        def still_news() -> bool:  # not bound, deleted or failed anew since it was queued
            with self._lock:
                return self._conditions.get(pod.uid) == message

        def patch() -> None:
            self.client.patch(pod_path(pod.namespace, pod.name, "status"),
                              uid_guard(pod, unschedulable_condition_patch(message, reason)))

        try:
            if write_about(self.client, pod, patch, wanted=still_news):
                return
        except ApiError as err:
            if err.status == 403:
                log.error(describe_forbidden(err, "patch", "pods/status"))
            else:
                log.warning("condition PodScheduled for %s/%s not written: %s", pod.namespace, pod.name, err)
        with self._lock:
            if self._conditions.get(pod.uid) == message:
                self._conditions.pop(pod.uid, None)
