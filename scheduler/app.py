"""Wiring: informers -> cache + queue -> one scheduling loop -> assume -> binder -> events.

Threads: one informer per resource (nodes, pods), one scheduling loop, a binder pool, an event writer
pool, the leader elector and the health server. Only the loop decides; everything it needs per
decision is in memory (no API call and no listing per decision).

Which pods: unassigned pods whose spec.schedulerName names a profile, not being deleted, without
schedulingGates. Every non-terminal pod bound to a node is counted in the cache, whoever placed it.

Leadership: informers run on every instance (a standby keeps warm caches and takes over at once); only
the leader's loop pops pods. When the lease is lost the loop stops before the next pod and the instance
stands by for the lease again (kube-scheduler exits instead; here in-flight bindings finish, and their
UID precondition keeps them safe). Bindings already submitted complete either way.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.binder import Binder, BindOutcome, BindResult
from scheduler.cache import Cache
from scheduler.client import ApiError, Client
from scheduler.events import EventRecorder
from scheduler.framework import Profile, ScheduleResult
from scheduler.informer import Informer, object_key
from scheduler.leader import LeaderElector
from scheduler.metrics import Metrics
from scheduler.model import LENIENT, NodeInfo, PodInfo, PodSpecError
from scheduler.queue import QueuedPod, SchedulingQueue
from scheduler.server import HealthServer

log = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# kube-scheduler's pod informer skips finished pods: they hold no resources.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass
class LeaderSettings:
    """The Lease and its timings; cli.py fills them from leaderElection (whose defaults are the only ones)."""

    namespace: str
    name: str
    lease_duration: float
    renew_deadline: float
    retry_period: float
    identity: str | None = None


@dataclass
class RuntimeSettings:
    """What the runtime needs beyond the profiles; cli.py fills it from the config file and flags."""

    leader: LeaderSettings | None = None  # None: leader election off (local runs)
    # Where /healthz, /readyz and /metrics are served (healthzBindAddress, metricsBindAddress); port 0
    # picks a free port (tests). Empty: no server.
    serve: tuple[tuple[str, int], ...] = (("0.0.0.0", 10251),)
    bind_workers: int = 16
    assumed_ttl: float = 30.0
    seed: int | None = None


class Scheduler:
    """One scheduler process. `profiles` maps schedulerName -> framework Profile."""

    def __init__(self, client: Client, profiles: Mapping[str, Profile], settings: RuntimeSettings) -> None:
        self.client = client
        self.profiles = dict(profiles)
        self.settings = settings
        self.cache = Cache(assumed_ttl=settings.assumed_ttl)
        self.queue = SchedulingQueue()
        self.metrics = Metrics()
        self.recorder = EventRecorder(client.with_own_limiter())
        self.binder = Binder(client, self._bind_done, workers=settings.bind_workers)
        self.rng = random.Random(settings.seed)
        self._pending: dict[str, str] = {}  # key -> uid of unassigned pods that are ours
        self._malformed: dict[str, PodSpecError] = {}  # uid -> why its spec does not parse
        self._gated: set[str] = set()  # uids of our pods waiting for spec.schedulingGates to clear
        self._pending_lock = threading.Lock()
        self._binding: dict[str, tuple[QueuedPod, str]] = {}  # uid -> (queued pod, profile)
        self._stop = threading.Event()
        self._leading = threading.Event()
        self.node_informer = Informer(
            client,
            "nodes",
            "/api/v1/nodes",
            _Handler(self.handle_node, self.handle_node_deleted),
            on_relist=lambda c: self.metrics.relists.labels("nodes", c).inc(),
        )
        self.pod_informer = Informer(
            client,
            "pods",
            "/api/v1/pods",
            _Handler(self.handle_pod, self.handle_pod_deleted),
            field_selector=POD_FIELD_SELECTOR,
            on_relist=lambda c: self.metrics.relists.labels("pods", c).inc(),
        )
        self.elector: LeaderElector | None = None
        if settings.leader is not None:
            ls = settings.leader
            self.elector = LeaderElector(
                client.with_own_limiter(),
                namespace=ls.namespace,
                name=ls.name,
                identity=ls.identity,
                lease_duration=ls.lease_duration,
                renew_deadline=ls.renew_deadline,
                retry_period=ls.retry_period,
                on_started=self._started_leading,
                on_stopped=self._stopped_leading,
            )
        self.servers = [
            HealthServer(host, port, registry=self.metrics.registry, healthy=self._healthy, ready=self._ready)
            for host, port in dict.fromkeys(settings.serve)
        ]
        self._loop_thread = threading.Thread(target=self._loop, name="scheduling-loop", daemon=True)
        self._elector_thread: threading.Thread | None = None
        self.scheduled_count = 0

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching, then lead (or stand by), then schedule. Returns at once."""
        for server in self.servers:
            server.start()
        self.node_informer.start()
        self.pod_informer.start()
        self._loop_thread.start()
        if self.elector is None:
            self._started_leading()
        else:
            self._elector_thread = threading.Thread(
                target=self._run_elector, name="leader-election", daemon=True
            )
            self._elector_thread.start()

    def _run_elector(self) -> None:
        # Candidates wait for warm caches first so a new leader decides on a full view at once.
        assert self.elector is not None
        if self.wait_synced():
            self.elector.run(self._stop)

    def synced(self) -> bool:
        return self.node_informer.synced.is_set() and self.pod_informer.synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for both caches to sync; False on timeout or once the scheduler is asked to stop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.synced():
            if self._stop.wait(0.02) or (deadline is not None and time.monotonic() > deadline):
                return False
        return True

    def stop_requested(self) -> None:
        """Signal-safe: ask every loop to end (stop() then joins them)."""
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        self._leading.clear()
        self.queue.close()
        if self._elector_thread is not None:
            self._elector_thread.join(10)
        self._loop_thread.join(10)
        self.node_informer.stop()
        self.pod_informer.stop()
        self.binder.close(wait=True)
        self.recorder.close()
        for server in self.servers:
            server.stop()

    def _started_leading(self) -> None:
        self.metrics.leader.set(1)
        self._leading.set()

    def _stopped_leading(self) -> None:
        self.metrics.leader.set(0)
        self._leading.clear()

    @property
    def is_leading(self) -> bool:
        return self._leading.is_set()

    def _healthy(self) -> tuple[bool, str]:
        if self._loop_thread.ident is None or self._loop_thread.is_alive():
            return True, "ok"
        return False, "scheduling loop not running"

    def _ready(self) -> tuple[bool, str]:
        if not self.synced():
            return False, "caches not synced"
        if self.is_leading:
            return True, "ok: leading"
        return True, "ok: standing by for the leader lease"

    # -- watch handlers --------------------------------------------------------------------------
    def handle_pod(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = meta.get("uid", "")
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.handle_pod_deleted(obj)
            return
        if spec.get("nodeName"):
            self.cache.add_pod(PodInfo.from_api(obj, LENIENT))
            self._drop_pending(object_key(obj), uid)
            return
        name = spec.get("schedulerName") or "default-scheduler"
        if name not in self.profiles:
            return  # not ours: never touched
        key = object_key(obj)
        if meta.get("deletionTimestamp"):
            self._drop_pending(key, uid)
            return
        if self.cache.is_assumed(uid):
            return  # decided, bind in flight: the watch will show it bound
        if spec.get("schedulingGates"):
            # Pod scheduling readiness: not a candidate until every gate is removed (an update).
            self._drop_pending(key, uid)
            self._gated.add(uid)
            return
        self._gated.discard(uid)
        with self._pending_lock:
            self._pending[key] = uid
        try:
            pod = PodInfo.from_api(obj)
            self._malformed.pop(uid, None)
        except PodSpecError as err:
            # Queued like any pod so that only the leader reports it, from the loop, with backoff.
            pod = _identity(obj, name, str(err))
            self._malformed[uid] = err
        self.queue.add(pod)

    def handle_pod_deleted(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid", "")
        removed = self.cache.remove_pod(uid)
        self._drop_pending(object_key(obj), uid)
        self.recorder.forget(uid)
        self._malformed.pop(uid, None)
        self._gated.discard(uid)
        if removed is not None:
            self.queue.move_all()  # freed capacity may fit an unschedulable pod

    def _drop_pending(self, key: str, uid: str) -> None:
        with self._pending_lock:
            if self._pending.get(key) == uid:
                del self._pending[key]
            else:
                return
        self.queue.delete(key)

    def is_pending(self, pod: PodInfo) -> bool:
        with self._pending_lock:
            return self._pending.get(pod.key) == pod.uid

    def handle_node(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        before = _node_signature(self.cache.node(name))
        info = self.cache.add_node(obj)
        # Kubelet status heartbeats change nothing the plugins read: do not stir the queue for them.
        if before != _node_signature(info):  # before is None for a new node
            self.queue.move_all()  # a node added, or changed in what the plugins read

    def handle_node_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.remove_node((obj.get("metadata") or {}).get("name", ""))

    # -- the scheduling loop ---------------------------------------------------------------------
    def _loop(self) -> None:
        # Deciding on a partial view (pods listed before all nodes, or bound pods not yet counted)
        # would misplace pods: like kube-scheduler, wait for both caches first.
        if not self.wait_synced():
            return
        last_housekeeping = 0.0
        while not self._stop.is_set():
            if not self._leading.wait(0.5):
                continue
            qp = self.queue.pop(timeout=1.0)
            now = time.monotonic()
            if now - last_housekeeping >= 1.0:
                last_housekeeping = now
                self._housekeeping()
            if qp is None:
                continue
            if not self._leading.is_set():
                self.queue.failed(qp, unschedulable=False)  # lost the lease meanwhile: keep it queued
                continue
            try:
                self.schedule_one(qp)
            except Exception:
                log.exception("scheduling %s failed unexpectedly", qp.pod.key)
                self.queue.failed(qp, unschedulable=False)

    def _housekeeping(self) -> None:
        for pod in self.cache.cleanup():
            if self.is_pending(pod):
                self.queue.add(dataclass_replace_node(pod, None))
        for queue_name, n in self.queue.counts().items():
            self.metrics.pending_pods.labels(queue_name).set(n)
        self.metrics.pending_pods.labels("gated").set(len(self._gated))
        for kind, n in self.cache.counts().items():
            self.metrics.cache_size.labels(kind).set(n)

    def schedule_one(self, qp: QueuedPod) -> None:
        pod = qp.pod
        if not self.is_pending(pod) or self.cache.has_pod(pod.uid):
            self.queue.done(pod.key)  # deleted, bound elsewhere, or already decided
            return
        profile_name = pod.scheduler_name
        profile = self.profiles[profile_name]
        start = time.perf_counter()
        try:
            malformed = self._malformed.get(pod.uid)
            if malformed is not None:
                raise malformed
            result = profile.schedule(pod, self.cache.snapshot().nodes, self.rng)
        except PodSpecError as err:  # a malformed quantity, affinity, or annotation a plugin reads
            self._observe(start, "error", profile_name)
            message = f"invalid pod spec: {err.field}: {err.reason}"
            log.warning("pod %s: %s", pod.key, message)
            self.recorder.failed(pod, message, profile_name)
            self.queue.failed(qp, unschedulable=True)  # retried when the pod changes
            return
        node = result.node_name
        if node is None:
            self._observe(start, "unschedulable", profile_name)
            log.info("pod %s unschedulable: %s", pod.key, result.message)
            _log_verdicts(pod, result)
            self.recorder.failed(pod, result.message, profile_name)
            self.queue.failed(qp, unschedulable=True)
            return
        try:
            assumed = self.cache.assume(pod, node)
        except (KeyError, ValueError) as err:
            self._observe(start, "error", profile_name)
            log.warning("pod %s: cannot assume on %s: %s", pod.key, node, err)
            self.queue.failed(qp, unschedulable=False)
            return
        self.queue.done(pod.key)
        self._observe(start, "scheduled", profile_name)
        if log.isEnabledFor(logging.INFO):  # explain() costs tens of us at 5,000 nodes: only when logged
            log.info("pod %s scheduled to %s", pod.key, result.explain())
        _log_verdicts(pod, result)
        self._binding[pod.uid] = (qp, profile_name)
        self.binder.submit(assumed, node)

    def _observe(self, start: float, result: str, profile: str) -> None:
        self.metrics.attempts.labels(result, profile).inc()
        self.metrics.attempt_duration.labels(result, profile).observe(time.perf_counter() - start)

    # -- binding results (binder threads) --------------------------------------------------------
    def _bind_done(self, res: BindResult) -> None:
        pod = res.pod
        qp, profile_name = self._binding.pop(pod.uid, (None, pod.scheduler_name))
        self.metrics.binding_duration.labels(res.outcome.value).observe(res.seconds)
        if res.outcome is BindOutcome.BOUND:
            self.cache.finish_binding(pod.uid)
            with self._pending_lock:
                self.scheduled_count += 1
            if qp is not None:
                self.metrics.e2e_duration.labels(str(min(qp.attempts, 16))).observe(
                    max(time.monotonic() - qp.initial_attempt_at, 0.0)
                )
            self.recorder.scheduled(pod, res.node, profile_name)
            return
        self.cache.forget(pod.uid)
        err = res.error
        if res.outcome in (BindOutcome.GONE, BindOutcome.CONFLICT):
            # Deleted, re-created with a new UID, or bound by someone else: nothing left to do for
            # this pod object; a new one arrives through the watch on its own.
            log.info("pod %s not bound to %s: %s (dropped)", pod.key, res.node, err.message if err else "")
            self._drop_pending(pod.key, pod.uid)
            return
        log.warning("binding %s to %s failed: %s; retrying with backoff", pod.key, res.node, err)
        self.recorder.failed(
            pod,
            f"Binding rejected: {err.message if err else 'unknown error'}",
            profile_name,
            reason="SchedulerError",
        )
        if qp is not None and self.is_pending(pod):
            qp.pod = dataclass_replace_node(pod, None)
            self.queue.failed(qp, unschedulable=False)

    # -- start-up --------------------------------------------------------------------------------
    def check_server(self, attempts: int | None = None, sleep: Callable[[float], None] | None = None) -> bool:
        """GET /version until it answers, saying which server is unreachable and why."""
        delay, n = 1.0, 0
        while not self._stop.is_set():
            n += 1
            try:
                info = self.client.get("/version", timeout=10.0)
                log.info(
                    "API server %s reachable (version %s)", self.client.host, info.get("gitVersion", "?")
                )
                return True
            except ApiError as err:
                if not err.unreachable and err.status not in (500, 502, 503, 504):
                    return True  # it answered (401/403/404 on /version are reported where they matter)
                log.error(
                    "cannot reach the Kubernetes API server at %s: %s; retrying in %.0fs "
                    "(check the kubeconfig's server address and that the API server is up)",
                    self.client.host,
                    err.message,
                    delay,
                )
            if attempts is not None and n >= attempts:
                return False
            (sleep or self._stop.wait)(delay)
            delay = min(delay * 2, 30.0)
        return False


def dataclass_replace_node(pod: PodInfo, node: str | None) -> PodInfo:
    return dataclasses.replace(pod, node_name=node)


def _identity(obj: dict[str, Any], scheduler_name: str, problem: str) -> PodInfo:
    """A PodInfo carrying only identity, for queueing and reporting a pod whose spec does not parse.
    The problem is kept where the queue looks for changes, so a different problem is reported anew
    while updates that leave it as it was (e.g. our own status patch) do not retry the pod."""
    meta = obj.get("metadata") or {}
    return PodInfo(
        uid=meta.get("uid", ""),
        namespace=meta.get("namespace") or "default",
        name=meta.get("name", ""),
        resource_version=meta.get("resourceVersion", ""),
        scheduler_name=scheduler_name,
        annotations={"kubelab.scheduler/spec-error": problem},
    )


def _node_signature(info: NodeInfo | None) -> tuple | None:
    if info is None:
        return None
    return (info.labels, info.taints, info.allocatable, info.unschedulable)


def _log_verdicts(pod: PodInfo, result: ScheduleResult) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    for node, status in result.failures.items():
        log.debug(
            "pod %s: node %s rejected by %s: %s", pod.key, node, status.plugin or "filter", status.reason
        )
    for node in result.feasible_nodes:
        log.debug("pod %s: node %s feasible, scores %s", pod.key, node, result.node_scores(node) or "-")


_ObjectCallback = Callable[[dict[str, Any]], None]


class _Handler:
    """The informer's Handler: adds and updates go to one method (handlers read the whole object)."""

    def __init__(self, changed: _ObjectCallback, deleted: _ObjectCallback) -> None:
        self.on_add = self.on_update = changed
        self.on_delete = deleted
