"""The scheduler's view of nodes and of the pods counted on them, including assumed pods.

An assumed pod is one the scheduler has decided to place but has not yet seen bound through the watch.
It is counted on its node at once, so the next decision, made microseconds later, sees the node's
capacity already taken (no over-commit under a burst). Its life, as in kube-scheduler's cache:

    assume() --bind ok--> finish_binding() --watch shows it bound--> confirmed (an ordinary pod)
       |                        |
       +--bind failed--> forget()   +--not seen bound within `assumed_ttl`--> expired by cleanup()

Snapshots: the scheduling loop works on clones of the NodeInfos, refreshed incrementally: every change
marks its node dirty, and `snapshot()` re-clones only dirty nodes (kube-scheduler's generation-based
UpdateSnapshot). A cycle therefore sees one consistent state, while watch handlers keep writing to the
live cache without waiting for the cycle, and a cycle costs no copy of the unchanged nodes.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.memo import carry_memo
from scheduler.model import NodeInfo, NodeTraits, PodInfo
from scheduler.model.pod_index import PodIndex
from scheduler.model.raw import POD_NOT_KEPT
from scheduler.model.volumes import VolumeStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _PodState:
    pod: PodInfo
    node: str
    assumed: bool = False
    deadline: float | None = None  # set when binding finished; None while binding or confirmed


class Snapshot:
    """Clones of the cache's NodeInfos for one scheduling cycle; never written by the cache during a cycle.

    ``pod_index`` holds the pods indexed for inter-pod affinity (``scheduler.model.pod_index``),
    ``namespace_labels`` each namespace's labels (a namespaceSelector reads them).

    ``nodes`` keeps a stable order, kube-scheduler's node tree order (``zone_interleaved``: the first node
    of each zone, zones in the order they first appeared, then the second of each...; within a zone, the
    order the cache received the nodes), applied when nodes are added or removed (a node removed and
    re-added between two snapshots, or moved to another zone, keeps its place until then, as in
    kube-scheduler): the framework resumes each search where the last one stopped, which assumes positions
    mean the same nodes from one decision to the next. ``index`` maps a node name to its position in
    ``nodes``; ``traits`` counts the cordoned, tainted and image-listing nodes among them.
    """

    def __init__(self) -> None:
        self.by_name: dict[str, NodeInfo] = {}
        self.nodes: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.traits = NodeTraits()
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.pod_index = PodIndex()

    def get(self, name: str) -> NodeInfo | None:
        return self.by_name.get(name)


class Cache:
    def __init__(self, *, assumed_ttl: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 keep_pod_objects: bool = False) -> None:
        self.assumed_ttl = assumed_ttl
        # Whether pods counted on nodes keep their API object (PodInfo.raw): only when a plugin reads it,
        # since it about doubles what the cache holds.
        self.keep_pod_objects = keep_pod_objects
        self._clock = clock
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeInfo] = {}
        # kube-scheduler's node tree: zone key -> node names in arrival order (zones in order of appearance)
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._pods: dict[str, _PodState] = {}  # uid -> state
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # node name not (yet) known -> uid -> pod
        self._assumed: set[str] = set()  # uids of assumed pods (cleanup looks only at these)
        self._dirty: set[str] = set()
        self._namespaces: dict[str, dict[str, str]] = {}  # name -> labels
        self._namespaces_changed = False
        self._snapshot = Snapshot()
        # Claims, PVs and StorageClasses: read live by the volume plugins, never part of a snapshot.
        self.volumes = VolumeStore()

    # -- nodes -----------------------------------------------------------------------------------
    def add_node(self, obj: Mapping[str, Any]) -> NodeInfo:
        """Add or update a node from its API object."""
        name = (obj.get("metadata") or {}).get("name", "")
        with self._lock:
            info = self._nodes.get(name)
            if info is not None:
                info.update_node(obj)
            else:
                info = NodeInfo.from_api(obj)
                self._nodes[name] = info
                for pod in self._orphans.pop(name, {}).values():
                    info.add_pod(pod)
            zone = zone_key(obj)
            if self._zone_of.get(name) != zone:
                self._leave_zone(name)
                self._zones.setdefault(zone, []).append(name)
                self._zone_of[name] = zone
            self._dirty.add(name)
            return info

    def remove_node(self, name: str) -> None:
        with self._lock:
            info = self._nodes.pop(name, None)
            if info is None:
                return
            self._leave_zone(name)
            if info.pods:  # pods outlive their node object until the garbage collector deletes them
                self._orphans[name] = dict(info.pods)
            self._dirty.add(name)

    # -- namespaces -----------------------------------------------------------------------------
    def set_namespace(self, name: str, labels: dict[str, str]) -> None:
        with self._lock:
            if self._namespaces.get(name) != labels:
                self._namespaces[name] = labels
                self._namespaces_changed = True

    def remove_namespace(self, name: str) -> None:
        with self._lock:
            if self._namespaces.pop(name, None) is not None:
                self._namespaces_changed = True

    # -- pods seen through the watch -------------------------------------------------------------
    def add_pod(self, pod: PodInfo) -> PodInfo | None:
        """A pod bound to pod.node_name (added or updated). Confirms a matching assumed pod. Returns the
        version the watch showed before, None for a pod the watch shows for the first time: new here, or
        assumed by this scheduler and now confirmed (pods rejected before the assume never saw it)."""
        node = pod.node_name
        if not node:
            raise ValueError(f"pod {pod.key} has no nodeName")
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is not None:
                if state.assumed and state.node != node:
                    log.warning("pod %s was assumed on %s but is bound to %s", pod.key, state.node, node)
                self._unplace(state)
            self._place(pod, node)
            self._pods[pod.uid] = _PodState(pod, node)
            self._assumed.discard(pod.uid)
            return None if state is None or state.assumed else state.pod

    def remove_pod(self, uid: str) -> PodInfo | None:
        """A pod deleted, finished (Succeeded/Failed), or otherwise gone."""
        with self._lock:
            state = self._pods.pop(uid, None)
            if state is None:
                return None
            self._assumed.discard(uid)
            self._unplace(state)
            return state.pod

    def has_pod(self, uid: str) -> bool:
        with self._lock:
            return uid in self._pods

    def is_assumed(self, uid: str) -> bool:
        with self._lock:
            state = self._pods.get(uid)
            return state is not None and state.assumed

    # -- assumed pods ----------------------------------------------------------------------------
    def assume(self, pod: PodInfo, node: str) -> PodInfo:
        """Count `pod` on `node` before the bind; returns the assumed copy (node_name set)."""
        with self._lock:
            if pod.uid in self._pods:
                raise ValueError(f"pod {pod.key} ({pod.uid}) is already in the cache")
            if node not in self._nodes:
                raise KeyError(f"node {node} is no longer in the cache")
            assumed = _with_node_name(pod, node)
            if not self.keep_pod_objects:
                assumed._raw = POD_NOT_KEPT  # as the watch's version of it will be
            self._place(assumed, node)
            self._pods[pod.uid] = _PodState(assumed, node, assumed=True)
            self._assumed.add(pod.uid)
            return assumed

    def finish_binding(self, uid: str) -> None:
        """The bind call succeeded: start the clock for the watch to confirm it."""
        with self._lock:
            state = self._pods.get(uid)
            if state is not None and state.assumed:
                state.deadline = self._clock() + self.assumed_ttl

    def forget(self, uid: str) -> None:
        """The bind failed or the pod is gone: stop counting the assumed pod."""
        with self._lock:
            state = self._pods.get(uid)
            if state is not None and state.assumed:
                del self._pods[uid]
                self._assumed.discard(uid)
                self._unplace(state)

    def cleanup(self) -> list[PodInfo]:
        """Expire assumed pods whose binding finished but never showed up through the watch."""
        now = self._clock()
        expired = []
        with self._lock:
            for uid in list(self._assumed):
                state = self._pods[uid]
                if state.deadline is not None and state.deadline <= now:
                    del self._pods[uid]
                    self._assumed.discard(uid)
                    self._unplace(state)
                    expired.append(state.pod)
        for pod in expired:
            log.warning(
                "assumed pod %s on %s expired: its binding was never seen through the watch",
                pod.key,
                pod.node_name,
            )
        return expired

    # -- snapshot --------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Bring the loop's snapshot up to date (re-cloning only changed nodes) and return it.
        One caller at a time (the scheduling loop; in extender mode, a request holding the extender's
        lock); the returned object is valid until the next call.

        A changed node's clone replaces the old one at the same position of ``nodes``; the list (and its
        index) is rebuilt only when a node was added or removed. Every assume dirties one node, so
        rebuilding on each call would cost O(all nodes) per decision."""
        with self._lock:
            snap = self._snapshot
            if self._namespaces_changed:  # a new dict: the previous snapshot's stays as it was
                snap.namespace_labels = dict(self._namespaces)
                snap.pod_index.set_namespace_labels(snap.namespace_labels)
                self._namespaces_changed = False
            if not self._dirty:
                return snap
            membership_changed = False
            # The pod index forgets what changed on every node before it learns what is new on any: a pod
            # that moved between two changed nodes must end up indexed on its new node.
            previous = {name: snap.by_name.get(name) for name in self._dirty}
            for name, old in previous.items():
                if old is not None:
                    snap.pod_index.forget(old, self._nodes.get(name))
            for name in self._dirty:
                info = self._nodes.get(name)
                old = previous[name]
                if old is not None:
                    snap.traits.count(old, -1)
                if info is None:
                    if snap.by_name.pop(name, None) is not None:
                        membership_changed = True
                    continue
                clone = info.clone()
                snap.traits.count(clone, 1)
                if old is not None:
                    carry_memo(old, clone)
                snap.pod_index.learn(previous[name], clone)
                snap.by_name[name] = clone
                position = snap.index.get(name)
                if position is None:
                    membership_changed = True
                else:
                    snap.nodes[position] = clone
            self._dirty.clear()
            if membership_changed:  # in the node tree's order, not the dirty set's (hash) order
                order = zone_interleaved(self._zones)
                snap.nodes = [snap.by_name[name] for name in order]
                snap.index = {name: i for i, name in enumerate(order)}
        return snap

    def counts(self) -> dict[str, int]:
        with self._lock:
            assumed = len(self._assumed)
            return {"nodes": len(self._nodes), "pods": len(self._pods) - assumed, "assumed_pods": assumed}

    def node(self, name: str) -> NodeInfo | None:
        """The live NodeInfo (tests, debugging); callers must not mutate it."""
        with self._lock:
            return self._nodes.get(name)

    # -- internals (lock held) -------------------------------------------------------------------
    def _leave_zone(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:  # a zone that comes back later is listed last, as in kube-scheduler's node tree
            del self._zones[zone]

    def _place(self, pod: PodInfo, node: str) -> None:
        info = self._nodes.get(node)
        if info is not None:
            info.add_pod(pod)
            self._dirty.add(node)
        else:
            self._orphans.setdefault(node, {})[pod.uid] = pod

    def _unplace(self, state: _PodState) -> None:
        info = self._nodes.get(state.node)
        if info is not None:
            info.remove_pod(state.pod)
            self._dirty.add(state.node)
        else:
            orphans = self._orphans.get(state.node)
            if orphans is not None:
                orphans.pop(state.pod.uid, None)
                if not orphans:
                    del self._orphans[state.node]


# GetZoneKey reads the beta label first, the GA one only when the beta one is absent.
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def zone_key(obj: Mapping[str, Any]) -> str:
    """The node tree's zone of a Node object, as kube-scheduler keys it (GetZoneKey in
    k8s.io/component-helpers/node/topology): region and zone labels (the beta one, else the GA one) joined
    by ":\\x00:", or "" when the node has neither."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def zone_interleaved(zones: Mapping[str, list[str]]) -> list[str]:
    """kube-scheduler's node tree list: round robin over the zones (in the order given), the first node of
    each, then the second of each, and so on, skipping zones that have run out."""
    lists = list(zones.values())
    longest = max(map(len, lists), default=0)
    return [names[i] for i in range(longest) for names in lists if i < len(names)]


_POD_FIELDS = tuple(f.name for f in dataclasses.fields(PodInfo))
# The fast copy below is only right while PodInfo is a plain slots dataclass: no __post_init__ to run and
# every field stored in a slot. Otherwise fall back to dataclasses.replace.
_FAST_POD_COPY = not hasattr(PodInfo, "__post_init__") and set(getattr(PodInfo, "__slots__", ())) == set(
    _POD_FIELDS
)


def _with_node_name(pod: PodInfo, node: str) -> PodInfo:
    """A shallow copy of `pod` with node_name set, as dataclasses.replace makes it but about 4x cheaper
    (replace re-runs __init__ with every field; copy.copy is no better for a slots class, it goes through
    __reduce_ex__). Field values are shared, as with replace: the cache never mutates a PodInfo."""
    if not _FAST_POD_COPY or type(pod) is not PodInfo:
        return dataclasses.replace(pod, node_name=node)
    copy = object.__new__(PodInfo)
    for name in _POD_FIELDS:
        setattr(copy, name, getattr(pod, name))
    copy.node_name = node
    return copy
