"""Whole scheduling cycles in-process, for unit tests of plugins that use the points after the filters: the real
framework (``Profile.schedule``, ``Extensions``, ``WaitingPods``) driven one pod at a time over nodes and pods
given as YAML or objects, with a fake API, a fake clock and no cluster::

    sim = Cycles(cluster_from_yaml(path), plugins=[GANG], objects={PODGROUPS: [group]})
    sim.run_until_idle()          # every pod ready now: queue, scheduling cycle, Permit, binding cycle
    sim.advance(10)               # the clock moves; Permit timeouts and backoffs fire on the way
    sim.placements, sim.events, sim.waiting, sim.gated, sim.assumed

What it models, by kube-scheduler 1.36's schedule_one.go and the rules ``Extensions`` runs each point by:
- PreEnqueue: a pod a plugin gates stays out of the queue with that plugin's reason (``gated``), and is
  checked again whenever anything changes (a pod, node or watched object added or deleted, a pod bound);
- the active queue in the profile's QueueSort order (``sort_key(pod, enqueued_at)``); a plugin's
  ``Handle.activate`` moves pods out of backoff or their wait for a change into it;
- the scheduling cycle: ``Profile.schedule`` on a snapshot of the nodes (bound and assumed pods counted)
  whose ``ClusterView`` holds the watched objects; when no node fits, DefaultPreemption (when enabled) and
  then the profile's PostFilter plugins, whose reasons end the FailedScheduling message;
- assume (the pod counted on its node at once, so the next decision sees it), Reserve (a failure undoes it),
  Permit (a rejection undoes it; WAIT holds the pod in ``waiting`` until allowed, rejected, or its timeout on
  the fake clock passes: ``advance``);
- the binding cycle once Permit lets go: PreBind, Bind (the first plugin that does not skip), PostBind;
- any failure after assume: Unreserve in reverse order, the assumption forgotten, a FailedScheduling event
  naming the plugin and its reason, the pod back in the queue. A plugin that raises fails that pod's cycle
  with an ERROR naming it; the driver goes on with the other pods. Nothing is bound half-way;
- the queue after a failure: errors wait their backoff (1 s, doubling per attempt up to 10 s); pods no node
  fits (or that a plugin rejected) wait for a change, or 60 s as the scheduler's queue does, then their
  backoff. A failed binding cycle (a rejected wait, PreBind, Bind) gives room back: a change.

What it does not model: watches and their lag (a binding is seen at once: a plugin that ``watches``
"v1/pods" finds the pod bound), concurrency (one binding cycle runs to its end before the next pod is
tried), preemption's evictions unless asked (DefaultPreemption judges; a pod it would make room for is
recorded in ``nominations`` and, only with ``evict=True``, its victims are deleted once the cycle is over and
it is nominated), which events a plugin declares (any change but a pending pod's arrival retries every pod
waiting for one), API rate limits and retries, leader election.

The nodes live in the scheduler's own cache (``scheduler.runtime.cache.Cache``: assume, forget, incremental
snapshots in its node order), so a cycle clones only the nodes that changed; ``on_decision`` and ``on_evict``
let a caller (``./lab simulate``) watch each decision and each eviction.
"""

from __future__ import annotations

import copy
import heapq
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.framework import (
    DEFAULT_BINDER,
    SUCCESS,
    ApiCallError,
    ApiCalls,
    ClusterView,
    Code,
    CycleState,
    Extensions,
    Handle,
    ObjectStore,
    Plugin,
    Profile,
    Registry,
    Resource,
    Status,
    WaitingPod,
    build_profiles,
    implements,
    in_tree_registry,
    point_named,
)
from scheduler.framework.post_filter import run_post_filters
from scheduler.framework.result import ScheduleResult
from scheduler.framework.waiting import WaitingPods
from scheduler.model import NodeInfo, PodInfo, PodSpecError
from scheduler.runtime.cache import Cache
from scheduler.testing.builders import Cluster, cluster_from_yaml, node_object, pod_object

__all__ = ["ApiCall", "Cycles", "FakeApi", "FakeClock", "FakeHandle", "Gated", "RecordedEvent"]

PODS = "v1/pods"  # a plugin that watches it gets every pod's object, bound ones with spec.nodeName set
INITIAL_BACKOFF, MAX_BACKOFF = 1.0, 10.0
UNSCHEDULABLE_TIMEOUT = 60.0  # the scheduler's queue retries a pod no event helped after this long

GATED, ACTIVE, BACKOFF, UNSCHEDULABLE = "gated", "active", "backoff", "unschedulable"


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    body: Any
    error: ApiCallError | None = None  # the injected failure it met, if any


class FakeApi(ApiCalls):
    """Records every request (``calls``) and answers with the body sent; ``fail`` makes matching requests
    raise ``ApiCallError`` as a refusing server would."""

    def __init__(self) -> None:
        self.calls: list[ApiCall] = []
        self._failures: list[list[Any]] = []  # [method, path part, error, times left]

    def fail(self, method: str, path_part: str, *, status: int = 500, reason: str = "InternalError",
             message: str = "injected failure", times: int = 1) -> None:
        """The next ``times`` requests of ``method`` whose path contains ``path_part`` fail."""
        self._failures.append([method, path_part, ApiCallError(status, reason, message), times])

    def request(self, method: str, path: str, body: Any = None) -> Any:
        for rule in self._failures:
            if rule[3] > 0 and rule[0] == method and rule[1] in path:
                rule[3] -= 1
                self.calls.append(ApiCall(method, path, copy.deepcopy(body), rule[2]))
                raise rule[2]
        self.calls.append(ApiCall(method, path, copy.deepcopy(body)))
        return copy.deepcopy(body) if body is not None else {}

    @property
    def bindings(self) -> list[tuple[str, str]]:
        """(pod "namespace/name", node) of each Binding the server accepted, in order."""
        done = []
        for call in self.calls:
            if call.error is None and call.method == "POST" and call.path.endswith("/binding"):
                meta = call.body["metadata"]
                done.append((f"{meta['namespace']}/{meta['name']}", call.body["target"]["name"]))
        return done


class FakeHandle(Handle):
    """A ``Handle`` for tests: the fake clock, a ``FakeApi``, the given stores of watched objects, and its
    own pods waiting at Permit. ``bind`` posts a Binding with the pod's UID, as DefaultBinder does."""

    def __init__(self, scheduler_name: str = "default-scheduler", *, clock: FakeClock | None = None,
                 api: FakeApi | None = None, objects: Mapping[str, ObjectStore] | None = None,
                 activate: Callable[[list[str]], None] | None = None) -> None:
        self.clock = clock if clock is not None else FakeClock()
        super().__init__(scheduler_name, objects or {}, WaitingPods(self.clock),
                         api if api is not None else FakeApi(), activate)

    @property
    def api(self) -> FakeApi:
        assert isinstance(self._api, FakeApi)
        return self._api

    def now(self) -> float:
        return self.clock()

    def bind(self, pod: PodInfo, node: str) -> Status:
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            self._api.request("POST", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding", body)
        except ApiCallError as err:
            return Status(Code.ERROR, (f"binding rejected: {err.message}",), DEFAULT_BINDER)
        return SUCCESS


@dataclass(frozen=True)
class RecordedEvent:
    """What the scheduler would have written about a pod: ``reason`` "Scheduled" or "FailedScheduling";
    ``plugin``: the plugin whose status failed it ("" when the filters' counts say it all)."""

    pod: str  # namespace/name
    reason: str
    message: str
    plugin: str = ""
    at: float = 0.0


@dataclass(frozen=True)
class Gated:
    """A pod PreEnqueue keeps out of the queue: the plugin and its reason."""

    plugin: str
    reason: str


@dataclass(eq=False)
class _Queued:
    pod: PodInfo
    seq: int
    where: str = ""
    enqueued_at: float = 0.0
    attempts: int = 0
    failed_at: float = 0.0
    gate: Gated | None = None
    stamp: int = 0  # bumped on every move: a heap item with an older stamp is stale


@dataclass
class _Assumed:
    entry: _Queued
    pod: PodInfo  # the assumed version: spec.nodeName set
    node: str
    cycle: CycleState
    extensions: Extensions
    deleted: bool = False


@dataclass
class _Profiled:
    profile: Profile
    handle: FakeHandle
    extensions: Extensions


# What ``Cycles.on_decision`` is called with after each scheduling cycle's filters and scores (before
# Reserve): the pod and the result (``node_name`` None when no node fits).
DecisionHook = Callable[[PodInfo, ScheduleResult], None]
# What ``Cycles.on_evict`` is called with when preemption deletes a victim: the victim and the preemptor.
EvictionHook = Callable[[PodInfo, PodInfo], None]


class Cycles:
    """Scheduling cycles over one cluster (see the module's docstring). ``cluster``: a ``Cluster``, YAML text
    or a Path (``cluster_from_yaml``); ``registry`` and ``config`` (a KubeSchedulerConfiguration dict or
    object) as the scheduler takes them, or ``plugins``: descriptors to register and enable under multiPoint
    in one default profile (a QueueSort among them replaces PrioritySort); ``objects``: the watched objects by
    "group/version/resource". ``evict``: preemption deletes its victims and nominates the pod (as the
    scheduler does through the API); without it, preemption only records ``nominations``.

    The nodes and the pods counted on them live in the scheduler's own ``Cache`` (``cache``), so each cycle
    works on its incremental snapshot in the scheduler's node order: a changed node is cloned again, the
    others are not. The queue keeps its active pods in a heap and its timers (backoff ends, the
    unschedulable timeout) in another, so a cycle costs the same with 10 or 50,000 pods queued."""

    def __init__(self, cluster: Cluster | str | Path | None = None, *, registry: Registry | None = None,
                 config: Mapping[str, Any] | Any | None = None, plugins: Sequence[Plugin] = (),
                 objects: Mapping[str, Iterable[Mapping[str, Any]]] | None = None, seed: int = 0,
                 start: float = 0.0, unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT,
                 evict: bool = False) -> None:
        if cluster is None:
            cluster = Cluster()
        elif not isinstance(cluster, Cluster):
            cluster = cluster_from_yaml(cluster)
        registry = registry if registry is not None else in_tree_registry()
        if plugins:
            registry = registry.with_plugins([p for p in plugins if p.name not in registry], "Cycles(plugins=...)")
        config = _parse(config if config is not None else _default_config(plugins), registry)
        problems = config.point_problems()
        if problems:
            raise ValueError("the profiles cannot run standalone:\n  " + "\n  ".join(problems))
        self.clock = FakeClock(start)
        self.api = FakeApi()
        self.rng = random.Random(seed)
        self.unschedulable_timeout = unschedulable_timeout
        self.evict = evict
        self.on_decision: DecisionHook | None = None
        self.on_evict: EvictionHook | None = None
        profiles = build_profiles(config, registry)
        watched = {_canonical(kind) for p in profiles.values() for plugin in _plugins_of(p) for kind in plugin.watches}
        given = {_canonical(kind): list(items) for kind, items in (objects or {}).items()}
        self.stores: dict[str, ObjectStore] = {kind: ObjectStore(kind) for kind in sorted(watched | set(given))}
        for kind, items in given.items():
            for obj in items:
                self.stores[kind].put(obj)
        self._profiles: dict[str, _Profiled] = {}
        for name, profile in profiles.items():
            handle = FakeHandle(name, clock=self.clock, api=self.api, objects=self.stores, activate=self._activate)
            self._profiles[name] = _Profiled(profile, handle, Extensions(profile.points, handle))
        self._sort = next(iter(self._profiles.values())).extensions.sort_key  # one queue, one QueueSort
        self.cache = Cache(clock=self.clock, keep_pod_objects=True)
        self._bound: dict[str, str] = {}  # "namespace/name" -> uid of each pod counted on a node
        self.namespaces = dict(cluster.namespaces)
        for name, labels in self.namespaces.items():
            self.cache.set_namespace(name, dict(labels))
        self._queue: dict[str, _Queued] = {}
        self._active: list[tuple[Any, int, int, _Queued]] = []  # (sort key, seq, stamp, entry)
        self._timers: list[tuple[float, int, int, _Queued]] = []  # (when, seq, stamp, entry)
        self._gated: dict[str, _Queued] = {}
        self._unschedulable: dict[str, _Queued] = {}
        self._assumed: dict[str, _Assumed] = {}  # by pod UID
        self._settled: deque[tuple[Status, _Assumed]] = deque()  # binding cycles to run, in order
        self._seq = 0
        self._nominated: dict[str, tuple[str, PodInfo]] = {}  # uid -> (node, pod)
        self._evictions: list[str] = []  # victims preemption chose, deleted once the cycle is over
        self.placements: dict[str, str] = {}
        self.events: list[RecordedEvent] = []
        self.nominations: dict[str, str] = {}
        for node in cluster.nodes:
            self.add_node(node, quiet=True)
        for pod in cluster.pending:
            self.add_pod(pod)

    # -- what a test reads ----------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def waiting(self) -> dict[str, WaitingPod]:
        """Pods held at Permit by "namespace/name": ``node``, ``pending_plugins()``, ``deadlines``, ``since``."""
        return {w.pod.key: w for p in self._profiles.values() for w in p.handle.waiting.all()}

    @property
    def gated(self) -> dict[str, Gated]:
        return {key: e.gate for key, e in self._gated.items() if e.gate is not None}

    @property
    def assumed(self) -> dict[str, str]:
        """Pods reserved on a node and not bound (those waiting at Permit included): "namespace/name" -> node."""
        return {a.pod.key: a.node for a in self._assumed.values()}

    @property
    def queued(self) -> dict[str, str]:
        """Pods in the queue by "namespace/name": "gated", "active", "backoff" or "unschedulable"."""
        return {key: e.where for key, e in self._queue.items()}

    @property
    def nodes(self) -> dict[str, NodeInfo]:
        """The nodes with every bound and assumed pod counted (the scheduler's snapshot: read, do not change)."""
        return {node.name: node for node in self.cache.snapshot().nodes}

    def events_for(self, pod: str) -> list[RecordedEvent]:
        return [e for e in self.events if e.pod == pod]

    def handle(self, scheduler_name: str | None = None) -> FakeHandle:
        return self._profile(scheduler_name).handle

    def instance(self, plugin: str, scheduler_name: str | None = None) -> Any:
        """The object a plugin's ``setup`` class made for the profile (to read what it keeps)."""
        return self._profile(scheduler_name).extensions.instances[plugin]

    def _profile(self, scheduler_name: str | None) -> _Profiled:
        return self._profiles[scheduler_name] if scheduler_name else next(iter(self._profiles.values()))

    # -- what a test changes --------------------------------------------------------------------------
    def add_pod(self, obj: PodInfo | Mapping[str, Any] | str) -> PodInfo:
        """A pod is created: bound (spec.nodeName) it is counted on its node; pending and ours it goes through
        PreEnqueue into the queue. Every gated pod is checked again; a bound one also sends the pods no node
        fitted back to the queue (a pending one takes no room, so they stay)."""
        pod = obj if isinstance(obj, PodInfo) else PodInfo.from_api(pod_object(obj))
        if pod.node_name:
            self.cache.add_pod(pod)
            self._bound[pod.key] = pod.uid
            self._put_pod_object(pod)
        else:
            self._put_pod_object(pod)
            if pod.scheduler_name in self._profiles and pod.key not in self._queue:
                self._seq += 1
                entry = _Queued(pod, self._seq, enqueued_at=self.now)
                self._queue[pod.key] = entry
                self._gate(entry)
            self._changed(retry=False)  # a pending pod takes no room: only the gates are checked again
            return pod
        self._changed()
        return pod

    def delete_pod(self, key: str) -> None:
        """A pod is deleted: out of the queue, its wait at Permit ended (its reservation undone), or no longer
        counted on its node."""
        entry = self._queue.pop(key, None)
        if entry is not None:
            self._move(entry, "")
        for record in list(self._assumed.values()):
            if record.pod.key == key:
                record.deleted = True
                waiting = record.extensions.handle.get_waiting_pod(record.pod.uid) if record.extensions.handle else None
                if waiting is not None:
                    waiting.reject("", "pod was deleted")
        uid = self._bound.pop(key, None)
        if uid is not None:
            self.cache.remove_pod(uid)
        for nominated_uid in [u for u, (_, p) in self._nominated.items() if p.key == key]:
            del self._nominated[nominated_uid]
        self.placements.pop(key, None)
        if PODS in self.stores:
            namespace, name = key.split("/", 1)
            self.stores[PODS].remove({"metadata": {"namespace": namespace, "name": name}})
        self._drain()
        self._changed()

    def add_node(self, obj: NodeInfo | Mapping[str, Any] | str, *, quiet: bool = False) -> NodeInfo:
        """A node is added (a NodeInfo's pods come with it)."""
        node = obj if isinstance(obj, NodeInfo) else NodeInfo.from_api(node_object(obj))
        if node._raw is None:
            raise ValueError(f"node {node.name}: a NodeInfo built from its Node object (NodeInfo.from_api) is needed")
        self.cache.add_node(node._raw)
        for pod in node.pods.values():
            self.cache.add_pod(pod)
            self._bound[pod.key] = pod.uid
            self._put_pod_object(pod)
        if not quiet:
            self._changed()
        return self.cache.node(node.name) or node

    def put_object(self, resource: str, obj: Mapping[str, Any]) -> None:
        """A watched object is created or updated."""
        self.stores.setdefault(_canonical(resource), ObjectStore(resource)).put(obj)
        self._changed()

    def delete_object(self, resource: str, obj: Mapping[str, Any]) -> None:
        self.stores[_canonical(resource)].remove(obj)
        self._changed()

    # -- running --------------------------------------------------------------------------------------
    def run_until_idle(self, max_cycles: int = 10_000) -> int:
        """Run scheduling cycles (and the binding cycles they lead to) until no pod is ready at the current
        time; returns how many scheduling cycles ran."""
        cycles = 0
        self._tick()
        while (entry := self._pop()) is not None:
            cycles += 1
            if cycles > max_cycles:
                raise RuntimeError(f"more than {max_cycles} scheduling cycles without becoming idle")
            self._schedule_one(entry)
            self._drain()
            self._tick()
        return cycles

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on, stopping at each Permit deadline, backoff end and queue timeout on
        the way to run what it lets go."""
        target = self.now + seconds
        self.run_until_idle()
        while (moment := self.next_moment()) is not None and moment <= target:
            self.clock.now = moment
            self.run_until_idle()
        self.clock.now = target
        self.run_until_idle()

    def next_moment(self) -> float | None:
        """The next time something is due (a Permit deadline, a backoff end, a queue timeout), or None."""
        moments = [d for p in self._profiles.values() if (d := p.handle.waiting.next_deadline()) is not None]
        while self._timers and not self._timer_live(self._timers[0]):
            heapq.heappop(self._timers)
        if self._timers:
            moments.append(self._timers[0][0])
        later = [m for m in moments if m > self.now]
        return min(later) if later else None

    # -- the queue ------------------------------------------------------------------------------------
    def _move(self, entry: _Queued, where: str) -> None:
        """Put the entry where it now belongs ("" for out of the queue) in the index of that state."""
        entry.stamp += 1
        key = entry.pod.key
        if entry.where == GATED:
            self._gated.pop(key, None)
        elif entry.where == UNSCHEDULABLE:
            self._unschedulable.pop(key, None)
        entry.where = where
        if where == ACTIVE:
            heapq.heappush(self._active, (self._sort(entry.pod, entry.enqueued_at), entry.seq, entry.stamp, entry))
        elif where == GATED:
            self._gated[key] = entry
        elif where == BACKOFF:
            heapq.heappush(self._timers, (self._backoff_end(entry), entry.seq, entry.stamp, entry))
        elif where == UNSCHEDULABLE:
            self._unschedulable[key] = entry
            heapq.heappush(self._timers, (entry.failed_at + self.unschedulable_timeout, entry.seq, entry.stamp,
                                          entry))

    def _timer_live(self, item: tuple[float, int, int, _Queued]) -> bool:
        entry = item[3]
        return entry.stamp == item[2] and self._queue.get(entry.pod.key) is entry

    def _gate(self, entry: _Queued) -> None:
        status = self._profiles[entry.pod.scheduler_name].extensions.pre_enqueue(entry.pod)
        if status is not None:
            entry.gate = Gated(status.plugin, status.reason)
            if entry.where != GATED:
                self._move(entry, GATED)
        elif entry.where in (GATED, ""):
            entry.gate, entry.enqueued_at = None, self.now
            self._move(entry, ACTIVE)

    def _activate(self, keys: list[str]) -> None:
        """A plugin's Handle.activate: these pods out of backoff or their wait for a change, to be tried next."""
        for key in keys:
            entry = self._queue.get(key)
            if entry is not None and entry.where in (BACKOFF, UNSCHEDULABLE):
                entry.where, entry.enqueued_at = ACTIVE, self.now

    def _changed(self, *, retry: bool = True) -> None:
        """Something changed: gated pods are checked again, and (``retry``) pods no node fitted move on."""
        for entry in list(self._gated.values()):
            self._gate(entry)
        if retry:
            for entry in list(self._unschedulable.values()):
                self._requeue(entry)

    def _requeue(self, entry: _Queued) -> None:
        self._move(entry, BACKOFF if self._backoff_end(entry) > self.now else ACTIVE)

    def _backoff_end(self, entry: _Queued) -> float:
        return entry.failed_at + min(INITIAL_BACKOFF * 2 ** max(entry.attempts - 1, 0), MAX_BACKOFF)

    def _tick(self) -> None:
        """What the current time lets go: Permit deadlines, ended backoffs, the unschedulable timeout."""
        for profiled in self._profiles.values():
            profiled.handle.waiting.expire(self.now)
        self._drain()
        while self._timers and self._timers[0][0] <= self.now:
            item = heapq.heappop(self._timers)
            if not self._timer_live(item):
                continue
            entry = item[3]
            if entry.where == BACKOFF:
                self._move(entry, ACTIVE)
            elif entry.where == UNSCHEDULABLE:
                self._requeue(entry)

    def _pop(self) -> _Queued | None:
        while self._active:
            _, _, stamp, entry = heapq.heappop(self._active)
            if entry.stamp == stamp and entry.where == ACTIVE and self._queue.get(entry.pod.key) is entry:
                del self._queue[entry.pod.key]
                self._move(entry, "")
                return entry
        return None

    def _failed(self, entry: _Queued, message: str, plugin: str, *, unschedulable: bool) -> None:
        self.events.append(RecordedEvent(entry.pod.key, "FailedScheduling", message, plugin, self.now))
        if entry.pod.key in self._queue:  # deleted and re-created meanwhile: the new one stays
            return
        entry.failed_at = entry.enqueued_at = self.now
        self._queue[entry.pod.key] = entry
        self._move(entry, UNSCHEDULABLE if unschedulable else BACKOFF)

    # -- the scheduling cycle -------------------------------------------------------------------------
    def _nominated_for(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """The nominated pods that count when placing ``pod``: at least its priority, not itself."""
        out: dict[str, list[PodInfo]] = {}
        for uid, (node, other) in self._nominated.items():
            if uid != pod.uid and other.priority >= pod.priority:
                out.setdefault(node, []).append(other)
        return out

    def _schedule_one(self, entry: _Queued) -> None:
        pod = entry.pod
        entry.attempts += 1
        profiled = self._profiles[pod.scheduler_name]
        profile, extensions = profiled.profile, profiled.extensions
        snap = self.cache.snapshot()
        cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, self.cache.volumes, snap.traits,
                              kinds=self.stores)
        cycle = CycleState(cluster)
        nominated = self._nominated_for(pod) if self._nominated else {}
        try:
            result = profile.schedule(pod, snap.nodes, self.rng, cluster, nominated)
            if self.on_decision is not None:
                self.on_decision(pod, result)
            if result.node_name is None:
                message, plugin, error = self._post_filter(profiled, cycle, pod, result, snap.nodes, cluster,
                                                           nominated)
                self._failed(entry, message, plugin, unschedulable=not error)
                return
        except PodSpecError as err:
            self._failed(entry, f"invalid pod spec: {err.field}: {err.reason}", "", unschedulable=True)
            return
        except Exception as err:  # noqa: BLE001  (a filter or score plugin raised: name it, go on)
            status = profile.raised(err)
            self._failed(entry, status.reason, status.plugin, unschedulable=False)
            return
        node = result.node_name
        cycle.node = node
        self._nominated.pop(pod.uid, None)
        assumed = self.cache.assume(pod, node)
        record = _Assumed(entry, assumed, node, cycle, extensions)
        self._assumed[pod.uid] = record
        status = extensions.reserve(cycle, assumed, node)
        if status is not None:
            self._undo(record, status)
            return
        permit = extensions.permit(cycle, assumed, node)
        if permit.rejection is not None:
            self._undo(record, permit.rejection)
            return
        if permit.waits:
            profiled.handle.waiting.add(assumed, node, permit.waits, self._on_settled)
            return
        self._settled.append((SUCCESS, record))

    def _post_filter(self, profiled: _Profiled, cycle: CycleState, pod: PodInfo, result: Any,
                     snapshot: list[NodeInfo], cluster: ClusterView,
                     nominated: Mapping[str, Sequence[PodInfo]]) -> tuple[str, str, bool]:
        """The FailedScheduling message, the plugin to name and whether a PostFilter failed with an error:
        DefaultPreemption's dry run, then the profile's PostFilter plugins (kube-scheduler's
        RunPostFilterPlugins joins their reasons). With ``evict``, preemption's victims are deleted."""
        post = run_post_filters(profiled.profile, pod, result, snapshot, cluster, (), nominated, self.rng,
                                profiled.extensions)
        if post.preemption is not None and post.preemption.node is not None:
            self.nominations[pod.key] = post.preemption.node
            if self.evict:
                self._nominated[pod.uid] = (post.preemption.node, pod)
                for victim in post.preemption.victims:
                    if self.on_evict is not None:
                        self.on_evict(victim, pod)
                    self._evictions.append(victim.key)
            return post.message, "", False
        if post.preemption is not None and post.preemption.clear_nomination:
            self._nominated.pop(pod.uid, None)
        rejection = result.pre_filter_rejection
        said = post.said
        message = post.message
        plugin = next((s.plugin for s in said if s.reasons), rejection.plugin if rejection is not None else "")
        return message, plugin, any(s.code is Code.ERROR for s in said)

    # -- the binding cycle ----------------------------------------------------------------------------
    def _on_settled(self, waiting: WaitingPod, status: Status) -> None:
        """A pod's wait at Permit ended (allowed, rejected, timed out): its binding cycle runs once the
        current step is over, never inside the plugin call that settled it."""
        record = self._assumed.get(waiting.pod.uid)
        if record is not None:
            self._settled.append((status, record))

    def _drain(self) -> None:
        while self._evictions:  # preemption's victims, deleted once the preemptor's cycle is over
            self.delete_pod(self._evictions.pop(0))
        while self._settled:
            status, record = self._settled.popleft()
            if self._assumed.get(record.pod.uid) is not record:
                continue
            if status.ok and not record.deleted:
                self._bind(record)
            else:
                self._undo(record, status, binding=True)

    def _bind(self, record: _Assumed) -> None:
        extensions, cycle, pod, node = record.extensions, record.cycle, record.pod, record.node
        status = extensions.pre_bind(cycle, pod, node)
        if status is None:
            status = extensions.bind(cycle, pod, node)
            if status.ok:
                del self._assumed[pod.uid]
                self.cache.finish_binding(pod.uid)
                self.cache.add_pod(pod)  # the watch shows it bound at once
                self._bound[pod.key] = pod.uid
                self.placements[pod.key] = node
                self._put_pod_object(pod)
                self.events.append(RecordedEvent(pod.key, "Scheduled",
                                         f"Successfully assigned {pod.key} to {node}", "", self.now))
                extensions.post_bind(cycle, pod, node)
                self._changed(retry=False)
                return
        self._undo(record, status, binding=True)

    def _undo(self, record: _Assumed, status: Status, *, binding: bool = False) -> None:
        """A failure after assume: Unreserve (every Reserve plugin, in reverse), forget, tell, requeue. A
        failed binding cycle (a wait that ended in rejection, PreBind, Bind) gives room back that other pods
        may fit in: the pods waiting for a change are tried again, as kube-scheduler's
        handleBindingCycleError moves them (AssignedPodDelete)."""
        pod = record.pod
        record.extensions.unreserve(record.cycle, pod, record.node)
        self.cache.forget(pod.uid)
        self._assumed.pop(pod.uid, None)
        if binding:
            self._changed()
        if record.deleted:
            return
        unschedulable = status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        self._failed(record.entry, status.reason, status.plugin, unschedulable=unschedulable)

    def _put_pod_object(self, pod: PodInfo) -> None:
        store = self.stores.get(PODS)
        if store is None:
            return
        obj = copy.deepcopy(dict(pod._raw)) if pod._raw is not None else {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": pod.namespace,
                                                            "uid": pod.uid, "labels": dict(pod.labels)}, "spec": {}}
        if pod.node_name:
            obj.setdefault("spec", {})["nodeName"] = pod.node_name
        store.put(obj)


def _canonical(kind: str) -> str:
    return str(Resource.parse(kind))


def _plugins_of(profile: Profile) -> Iterable[Plugin]:
    yield from (p for p, _ in profile.filters)
    yield from (p for p, _, _ in profile.scores)
    yield from (p for entries in profile.points.values() for p, _ in entries)


def _default_config(plugins: Sequence[Plugin]) -> dict[str, Any]:
    """One profile, default-scheduler, with ``plugins`` enabled under multiPoint (a QueueSort replacing
    PrioritySort)."""
    queue_sort = point_named("queueSort")
    profile: dict[str, Any] = {"schedulerName": "default-scheduler",
                               "plugins": {"multiPoint": {"enabled": [{"name": p.name} for p in plugins]}}}
    if any(implements(p, queue_sort) for p in plugins):
        profile["plugins"]["queueSort"] = {"disabled": [{"name": "PrioritySort"}]}
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def _parse(config: Any, registry: Registry) -> Any:
    from scheduler.config import parse_config  # the config module imports the framework; import it late

    if isinstance(config, Mapping):
        return parse_config(dict(config), "Cycles(config=...)", registry)
    return config



