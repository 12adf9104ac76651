"""Binding off the scheduling loop: a thread pool POSTing pods/{name}/binding.

The Binding carries metadata.uid, which the API server turns into a UID precondition: if the pod was
deleted and re-created under the same name, the bind fails (409 Conflict) instead of placing the new pod.
The official client's `create_namespaced_binding` raises "Invalid value for `target`, must not be `None`"
after a *successful* bind because it deserialises the returned Status as a Binding; this module posts raw
JSON and reads the status code, so that bug cannot bite.

Outcomes reported to the caller. A refusal is judged by what the pod now is, not by its status code
(``judge_refusal``, scheduler.runtime.pod_state): a 409 may as well be etcd failing behind the API server.
- BOUND         2xx
- GONE          the pod was deleted, is being deleted or was re-created under its name (UID differs);
                nothing to retry
- CONFLICT      the pod is assigned to a node (bound by someone, or by an earlier answer that was lost);
                nothing to retry
- ERROR         the pod is still unassigned, or could not be read, or the answer said nothing about it
                (5xx, 429, 403, connection, no answer within BIND_TIMEOUT): the caller forgets the
                assumption and retries with backoff
- CANCELLED     never sent: the binder was halted (leadership ended) while the binding waited its turn
- REJECTED      a PreBind or Bind plugin failed (``status`` says which and why): the caller undoes the
                reservation and retries

A profile with binding-cycle plugins hands the binder its own job (``submit(pod, node, run)``): PreBind,
Bind and PostBind on the worker thread, DefaultBinder's POST among them (scheduler.runtime.schedule_one).

Halting is how leadership ends safely: halt() cancels every binding not yet sent (queued, or waiting for
a client token), drain() waits for those already on the wire, and only then may the Lease be released.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from scheduler.framework import Status
from scheduler.model import PodInfo
from scheduler.runtime.client import ApiError, Client, RequestCancelled, describe_forbidden, pod_path
from scheduler.runtime.pod_state import PodStanding, read_state

log = logging.getLogger(__name__)

# A binding the API server has not answered within 15 s is given up (and retried): long enough for a busy
# server, short enough that a hand-over waiting for in-flight bindings fits kube's default 30 s
# terminationGracePeriodSeconds with the Lease release after it.
BIND_TIMEOUT = 15.0


class BindOutcome(enum.Enum):
    BOUND = "bound"
    GONE = "gone"
    CONFLICT = "conflict"
    ERROR = "error"
    CANCELLED = "cancelled"
    REJECTED = "rejected"


@dataclass(slots=True)
class BindResult:
    pod: PodInfo
    node: str
    outcome: BindOutcome
    seconds: float
    error: ApiError | None = None
    status: Status | None = None  # REJECTED: the plugin's status


def binding_body(pod: PodInfo, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def bind(client: Client, pod: PodInfo, node: str, cancel: threading.Event | None = None) -> BindResult:
    """One binding call, classified; not sent once `cancel` is set. Never raises for API answers."""
    start = time.perf_counter()
    try:
        client.request("POST", pod_path(pod.namespace, pod.name, "binding"), body=binding_body(pod, node),
                       timeout=BIND_TIMEOUT, cancel=cancel)
        outcome, error = BindOutcome.BOUND, None
    except RequestCancelled:
        outcome, error = BindOutcome.CANCELLED, None
    except ApiError as err:
        error = err
        if err.status == 403:
            log.error(describe_forbidden(err, "create", "pods/binding"))
        outcome = judge_refusal(client, pod, err, cancel)
    return BindResult(pod, node, outcome, time.perf_counter() - start, error)


def judge_refusal(client: Client, pod: PodInfo, err: ApiError, cancel: threading.Event | None = None) -> BindOutcome:
    """What a refused binding means for the pod. Only a 404 or 409 claims something about the pod, and
    a 409 is also how kube-apiserver reports a storage failure during a binding: for those the pod is read
    again and dropped only when it is gone, replaced or assigned. Any other refusal is retried without a
    read: the retry is harmless (a pod assigned meanwhile answers 409, then judged here), and the watch
    drops a pod that is bound or deleted before its retry."""
    if err.status not in (404, 409):
        return BindOutcome.ERROR
    state = read_state(client, pod, cancel)
    if state is PodStanding.GONE:
        return BindOutcome.GONE
    if state is PodStanding.ASSIGNED:
        return BindOutcome.CONFLICT
    return BindOutcome.ERROR


# One binding: (pod, node, this term's halt) -> its result. Never raises for API answers.
BindJob = Callable[[PodInfo, str, threading.Event], BindResult]


class Binder:
    """A fixed set of worker threads (started at the first submit) taking bindings from one queue. A plain
    SimpleQueue and threads of its own rather than a ThreadPoolExecutor: no Future, no semaphore and no
    result hand-off per pod, which the scheduler never reads."""

    def __init__(self, client: Client, on_done: Callable[[BindResult], None], *, workers: int = 16) -> None:
        self.client = client
        self._plain: BindJob = partial(bind, client)
        self._on_done = on_done
        self._workers = workers
        self._jobs: queue.SimpleQueue[tuple[PodInfo, str, threading.Event, BindJob] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._halt = threading.Event()  # replaced by resume(): each leadership term has its own
        self._unfinished = 0
        self._idle = threading.Condition()

    @property
    def halt_event(self) -> threading.Event:
        """This leadership term's halt: set when it ends."""
        return self._halt

    def submit(self, pod: PodInfo, node: str, run: BindJob | None = None) -> None:
        """Bind ``pod`` to ``node`` on a worker: the plain POST, or ``run`` (a whole binding cycle)."""
        with self._idle:
            self._unfinished += 1
            if not self._threads:
                self._threads = [threading.Thread(target=self._work, name=f"binder-{i}", daemon=True)
                                 for i in range(self._workers)]
                for thread in self._threads:
                    thread.start()
        self._jobs.put((pod, node, self._halt, run or self._plain))

    def halt(self) -> None:
        """Send nothing more: bindings not yet sent finish at once as CANCELLED."""
        self._halt.set()

    def resume(self) -> None:
        """Bind again (a new leadership term); bindings halted before stay cancelled."""
        self._halt = threading.Event()

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted binding has finished; False if some were still on the wire."""
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            self._run(*job)

    def _run(self, pod: PodInfo, node: str, halt: threading.Event, run: BindJob) -> None:
        try:
            try:
                result = run(pod, node, halt)
            except Exception as exc:  # unexpected: report as an error so the pod is retried, not lost
                log.exception("binding %s/%s to %s crashed", pod.namespace, pod.name, node)
                result = BindResult(pod, node, BindOutcome.ERROR, 0.0, ApiError(0, "Internal", str(exc)))
            try:
                self._on_done(result)
            except Exception:
                log.exception("handling the binding result of %s/%s failed", pod.namespace, pod.name)
        finally:
            with self._idle:
                self._unfinished -= 1
                self._idle.notify_all()

    def close(self, wait: bool = True) -> None:
        """Stop the workers once the bindings already queued are done; with ``wait``, until they have."""
        with self._idle:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()
