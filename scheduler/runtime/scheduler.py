"""The scheduler process: wiring and lifecycle (kube-scheduler's scheduler.go).

informers -> EventHandlers (eventhandlers.py) -> cache + queue -> the scheduling loop, which runs
SchedulingCycle.schedule_one (schedule_one.py) per popped pod -> assume -> binder -> events.

Threads: one informer per resource (nodes, pods, namespaces, claims, PVs, StorageClasses,
PodDisruptionBudgets when a profile preempts, and each kind a plugin watches), one scheduling loop, a binder
pool, an event writer pool, the Permit timer (pods waiting at Permit time out there, never on a binder
worker), the leader elector and the health server. Only the loop decides; everything it needs per
decision is in memory (no API call and no listing per decision).

Leadership: informers run on every instance (a standby keeps warm caches and takes over at once); only
the leader's loop pops pods. When leadership ends, the loop finishes the pod it is deciding and decides no
more, and every binding not yet sent is cancelled (its pod goes back to the queue), so two instances never
bind from two caches:
- asked to stop (SIGTERM): bindings already on the wire are awaited (at most BIND_TIMEOUT) and only then
  is the Lease released, so the next leader's cache has seen them before it decides;
- the Lease lost (not renewed within renewDeadline): nothing is awaited and the instance stands by again
  (kube-scheduler exits instead); another instance can take over only after leaseDuration, later still.
Either way the pods waiting at Permit are let go unbound, their reservations undone.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scheduler.framework import Extensions, ObjectStore, Profile, Status
from scheduler.framework.waiting import WaitingPods
from scheduler.model import PodInfo
from scheduler.runtime.binder import BIND_TIMEOUT
from scheduler.runtime.budgets import DisruptionBudgets
from scheduler.runtime.cache import Cache
from scheduler.runtime.client import ApiError, Client
from scheduler.runtime.eventhandlers import POD_KIND, EventHandlers, budget_informer, kind_informer
from scheduler.runtime.events import EventRecorder
from scheduler.runtime.handle import RuntimeHandle
from scheduler.runtime.leader import LeaderElector
from scheduler.runtime.metrics import Metrics
from scheduler.runtime.nominator import Nominator
from scheduler.runtime.pending import PendingPods
from scheduler.runtime.queue import SchedulingQueue
from scheduler.runtime.schedule_one import SchedulingCycle
from scheduler.runtime.server import HealthServer

log = logging.getLogger(__name__)


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
        self.cache = Cache(assumed_ttl=settings.assumed_ttl,
                           keep_pod_objects=any(p.reads_counted_pods_raw for p in self.profiles.values()))
        # The kinds plugins watch, one store and informer each, whatever the number of plugins reading them.
        self.kinds = {kind: ObjectStore(kind) for kind in sorted(frozenset().union(
            *(p.watches for p in self.profiles.values())))}
        self.waiting = WaitingPods(time.monotonic)
        self.handles = {name: RuntimeHandle(name, client, self.kinds, self.waiting,
                                            activate=lambda keys: self.queue.activate(keys))
                        for name in self.profiles}
        self.extensions = {name: Extensions(profile.points, self.handles[name])
                           for name, profile in self.profiles.items()}
        gates = any(e.gates for e in self.extensions.values())
        self.queue = SchedulingQueue(
            sort_key=next(iter(self.extensions.values())).sort_key,  # the same QueueSort in every profile
            pre_enqueue=self._pre_enqueue if gates else None)
        self.metrics = Metrics()
        self.metrics.export_client_counts(client.counts)
        self.recorder = EventRecorder(client.with_own_limiter())
        self.metrics.events_dropped.set_function(lambda: self.recorder.dropped)
        self.pending = PendingPods(self.queue)
        self.nominator = Nominator()
        self.budgets = DisruptionBudgets()
        self.handlers = EventHandlers(self.cache, self.queue, self.pending, self.recorder, self.profiles,
                                      self.nominator,
                                      frozenset().union(*(p.node_fields for p in self.profiles.values())))
        self.cycle = SchedulingCycle(client, self.profiles, self.cache, self.queue, self.pending,
                                     self.recorder, self.metrics, random.Random(settings.seed),
                                     bind_workers=settings.bind_workers, nominator=self.nominator,
                                     budgets=self.budgets, extensions=self.extensions, handles=self.handles,
                                     waiting=self.waiting, kinds=self.kinds)
        self.handlers.on_unassigned_gone = self._unassigned_gone
        self.handlers.on_pending_added = self.queue.retry_gated if gates else None
        self.node_informer, self.pod_informer, self.namespace_informer = self.handlers.informers(
            client, self.metrics.relists)
        self.volume_informers = self.handlers.volume_informers(client, self.metrics.relists)
        # Only a profile that preempts reads the budgets (and needs RBAC to list them).
        self.budget_informer = (budget_informer(client, self.budgets, self.metrics.relists)
                                if any(p.post_filter is not None for p in self.profiles.values()) else None)
        self.handlers.pod_store = self.kinds.get(POD_KIND)  # served by the pod informer, not a second watch
        self.kind_informers = [kind_informer(client, store, self.queue, self.metrics.relists)
                               for kind, store in self.kinds.items() if kind != POD_KIND]
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._deciding = threading.Lock()  # held by the loop for one pod's decision and hand-off to the binder
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
        self._permit_timer = threading.Thread(target=self._expire_waiting, name="permit-timer", daemon=True)
        self._elector_thread: threading.Thread | None = None

    @property
    def scheduled_count(self) -> int:
        """Pods bound so far."""
        return self.cycle.scheduled_count

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching, then lead (or stand by), then schedule. Returns at once."""
        for server in self.servers:
            server.start()
        self.node_informer.start()
        self.pod_informer.start()
        self.namespace_informer.start()
        for informer in self.volume_informers:
            informer.start()
        if self.budget_informer is not None:
            self.budget_informer.start()
        for informer in self.kind_informers:
            informer.start()
        self._loop_thread.start()
        self._permit_timer.start()
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
        return (self.node_informer.synced.is_set() and self.pod_informer.synced.is_set()
                and self.namespace_informer.synced.is_set()
                and all(informer.synced.is_set() for informer in self.volume_informers)
                and (self.budget_informer is None or self.budget_informer.synced.is_set())
                and all(informer.synced.is_set() for informer in self.kind_informers))

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for every cache (nodes, pods, namespaces, storage objects, budgets) to sync; False on timeout
        or once the scheduler is asked to stop."""
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
        self.queue.close()
        if self._elector_thread is not None:
            # The elector ends leadership (awaiting in-flight bindings) before it releases the Lease.
            assert self.settings.leader is not None
            self._elector_thread.join(BIND_TIMEOUT + 4 * self.settings.leader.retry_period + 5)
        else:
            self._stopped_leading()
        self._loop_thread.join(10)
        self.node_informer.stop()
        self.pod_informer.stop()
        self.namespace_informer.stop()
        for informer in self.volume_informers:
            informer.stop()
        if self.budget_informer is not None:
            self.budget_informer.stop()
        for informer in self.kind_informers:
            informer.stop()
        self._permit_timer.join(2)
        self.cycle.binder.close(wait=True)
        self.recorder.close()
        for server in self.servers:
            server.stop()

    def _started_leading(self) -> None:
        self.cycle.binder.resume()
        self.metrics.leader.set(1)
        self._leading.set()

    def _stopped_leading(self) -> None:
        """Decide nothing more and send no more bindings; when stopping, also wait for those in flight
        (the elector releases the Lease only after this returns)."""
        self._leading.clear()
        with self._deciding:
            pass  # the pod being decided now has reached the binder (or the queue)
        self.cycle.binder.halt()
        self.cycle.release_waiting()
        self.metrics.leader.set(0)
        if self._stop.is_set() and not self.cycle.binder.drain(BIND_TIMEOUT):
            log.warning("stopping with bindings still unanswered after %.0fs", BIND_TIMEOUT)

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

    # -- the scheduling loop ---------------------------------------------------------------------
    def _loop(self) -> None:
        # Deciding on a partial view (pods listed before all nodes, or bound pods not yet counted)
        # would misplace pods: like kube-scheduler, wait for every cache first.
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
            with self._deciding:
                if not self._leading.is_set():
                    self.queue.failed(qp, unschedulable=False)  # lost the lease meanwhile: keep it queued
                    continue
                try:
                    self.cycle.schedule_one(qp)
                except Exception:
                    log.exception("scheduling %s failed unexpectedly", qp.pod.key)
                    self.queue.failed(qp, unschedulable=False)

    def _housekeeping(self) -> None:
        self.cycle.requeue_expired()
        for queue_name, n in self.queue.counts().items():
            self.metrics.pending_pods.labels(queue_name).set(n)
        self.metrics.pending_pods.labels("gated").set(self.pending.gated_count() + self.queue.counts()["gated"])
        self.queue.retry_gated()
        for kind, n in self.cache.counts().items():
            self.metrics.cache_size.labels(kind).set(n)

    def _pre_enqueue(self, pod: PodInfo) -> Status | None:
        extensions = self.extensions.get(pod.scheduler_name)
        return extensions.pre_enqueue(pod) if extensions is not None else None

    def _unassigned_gone(self, uid: str) -> None:
        """A pod not yet bound was deleted: if it waits at Permit, reject it (kube-scheduler's
        RejectWaitingPod), which undoes its reservation."""
        waiting = self.waiting.get(uid)
        if waiting is not None:
            waiting.reject("", "pod deleted while waiting at Permit")

    def _expire_waiting(self) -> None:
        """The Permit timer: reject the pods whose wait has run out, checking at least twice a second."""
        while not self._stop.is_set():
            deadline = self.waiting.next_deadline()
            delay = 0.5 if deadline is None else min(0.5, max(deadline - time.monotonic(), 0.0))
            if self._stop.wait(delay):
                return
            self.waiting.expire()

    # -- start-up --------------------------------------------------------------------------------
    def unserved_kinds(self) -> list[str]:
        """One sentence per watched kind the API server does not serve (404 on its collection), naming the
        plugins that watch it and the fix: such an informer would never sync, and nothing would be scheduled."""
        problems = []
        for kind, store in self.kinds.items():
            try:
                self.client.get(store.resource.path, {"limit": 1}, timeout=10.0)
            except ApiError as err:
                if err.status != 404:
                    continue  # reported by the informer, which retries
                plugins = sorted({p.name for profile in self.profiles.values() for p in profile.plugins()
                                  if kind in p.watches})
                problems.append(f"the API server does not serve {kind} ({store.resource.path}: 404), which "
                                f"plugin {', '.join(plugins)} watches: install its CustomResourceDefinition "
                                "(a plugin folder's crds/ are applied by ./lab deploy-scheduler) or disable the plugin")
        return problems

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
