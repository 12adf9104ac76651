"""Informer callbacks: every watch event about a node, a pod, a namespace or a storage object (claims, PVs,
StorageClasses), turned into cache and queue updates (kube-scheduler's eventhandlers.go).

CacheHandlers keeps the cache: every node, and every non-terminal pod bound to a node, whoever placed it.
EventHandlers adds the queue. Which pods are queued: unassigned pods whose spec.schedulerName names a
profile, not being deleted, without schedulingGates.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from prometheus_client import Counter

from scheduler.framework import ObjectStore
from scheduler.framework.cluster_event import (
    ClusterEvent,
    NodeProperties,
    assigned_pod_change,
    changed_fields,
    node_change,
)
from scheduler.model import LENIENT, PodInfo, PodSpecError
from scheduler.model.raw import FieldPath
from scheduler.model.volumes import Claim, StorageClass, Volume
from scheduler.runtime.budgets import PDB_PATH, DisruptionBudgets
from scheduler.runtime.cache import Cache
from scheduler.runtime.client import Client
from scheduler.runtime.events import EventRecorder
from scheduler.runtime.informer import Informer, object_key
from scheduler.runtime.nominator import Nominator
from scheduler.runtime.pending import PendingPods
from scheduler.runtime.queue import SchedulingQueue

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# kube-scheduler's pod informer skips finished pods: they hold no resources.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class CacheHandlers:
    """What keeps the cache in step with the node and pod informers, and nothing else: every node, and every
    non-terminal pod bound to a node whoever placed it. The extender needs no more (it places no pods);
    EventHandlers adds the scheduler's queue. Called one event at a time from each informer's thread."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def informers(self, client: Client, relists: Counter) -> tuple[Informer, Informer, Informer]:
        """The node, pod and namespace informers feeding these handlers (nodes first: decisions wait for
        all three; namespace labels are what a pod affinity term's namespaceSelector reads); ``relists``
        counts their relists by resource and cause."""
        nodes = Informer(client, "nodes", "/api/v1/nodes", _Handler(self.node_changed, self.node_deleted),
                         on_relist=lambda cause: relists.labels("nodes", cause).inc())
        pods = Informer(client, "pods", "/api/v1/pods", _Handler(self.pod_changed, self.pod_deleted),
                        field_selector=POD_FIELD_SELECTOR,
                        on_relist=lambda cause: relists.labels("pods", cause).inc())
        namespaces = Informer(client, "namespaces", "/api/v1/namespaces",
                              _Handler(self.namespace_changed, self.namespace_deleted),
                              on_relist=lambda cause: relists.labels("namespaces", cause).inc())
        return nodes, pods, namespaces

    def volume_informers(self, client: Client, relists: Counter) -> tuple[Informer, Informer, Informer]:
        """The PersistentVolumeClaim, PersistentVolume and StorageClass informers the volume plugins read
        through ``cache.volumes``. A cluster whose pods use no claims pays only for their watch events."""
        def informer(resource: str, path: str, handler: _Handler) -> Informer:
            return Informer(client, resource, path, handler,
                            on_relist=lambda cause: relists.labels(resource, cause).inc())
        return (informer("persistentvolumeclaims", "/api/v1/persistentvolumeclaims",
                         _Handler(self.claim_changed, self.claim_deleted)),
                informer("persistentvolumes", "/api/v1/persistentvolumes",
                         _Handler(self.volume_changed, self.volume_deleted)),
                informer("storageclasses", "/apis/storage.k8s.io/v1/storageclasses",
                         _Handler(self.storage_class_changed, self.storage_class_deleted)))

    def pod_changed(self, obj: dict[str, Any]) -> None:
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.pod_deleted(obj)
        elif (obj.get("spec") or {}).get("nodeName"):
            pod = PodInfo.from_api(obj, LENIENT, keep_object=self.cache.keep_pod_objects)
            self.pod_bound(obj, assigned_pod_change(self.cache.add_pod(pod), pod))
        else:
            self.pod_unassigned(obj)

    def pod_bound(self, obj: dict[str, Any], event: ClusterEvent) -> None:
        """A pod now counted on its node; ``event`` is what that changes for pods counting others by label
        (nothing more to do for the cache alone)."""

    def pod_unassigned(self, obj: dict[str, Any]) -> None:
        """A pod waiting for a node (nothing to do for the cache alone)."""

    def pod_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.remove_pod((obj.get("metadata") or {}).get("uid", ""))

    def node_changed(self, obj: dict[str, Any]) -> None:
        self.cache.add_node(obj)

    def node_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.remove_node((obj.get("metadata") or {}).get("name", ""))

    def namespace_changed(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.cache.set_namespace(str(meta.get("name") or ""),
                                 {str(k): str(v) for k, v in (meta.get("labels") or {}).items()})

    def namespace_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.remove_namespace(str((obj.get("metadata") or {}).get("name") or ""))

    # Storage objects: each returns whether what the plugins read of it changed (a new object counts).
    def claim_changed(self, obj: dict[str, Any]) -> bool:
        claim = Claim.from_api(obj)
        if self.cache.volumes.claim(claim.namespace, claim.name) == claim:
            return False
        self.cache.volumes.set_claim(claim)
        return True

    def claim_deleted(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.cache.volumes.remove_claim(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def volume_changed(self, obj: dict[str, Any]) -> bool:
        volume = Volume.from_api(obj)
        if self.cache.volumes.volumes.get(volume.name) == volume:
            return False
        self.cache.volumes.set_volume(volume)
        return True

    def volume_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.volumes.remove_volume(str((obj.get("metadata") or {}).get("name") or ""))

    def storage_class_changed(self, obj: dict[str, Any]) -> bool:
        storage_class = StorageClass.from_api(obj)
        if self.cache.volumes.classes.get(storage_class.name) == storage_class:
            return False
        self.cache.volumes.set_class(storage_class)
        return True

    def storage_class_deleted(self, obj: dict[str, Any]) -> None:
        self.cache.volumes.remove_class(str((obj.get("metadata") or {}).get("name") or ""))


class EventHandlers(CacheHandlers):
    """The cache's handlers plus the scheduler's: unassigned pods it serves go to the queue, and changes that
    may make a waiting pod schedulable move it back to the active queue."""

    def __init__(self, cache: Cache, queue: SchedulingQueue, pending: PendingPods, recorder: EventRecorder,
                 scheduler_names: Collection[str], nominator: Nominator,
                 node_fields: Collection[FieldPath] = ()) -> None:
        super().__init__(cache)
        # The node fields the profiles' plugins declare by path (Plugin.requeue_on_fields).
        self.node_fields = frozenset(node_fields)
        self.nominator = nominator
        self.queue = queue
        self.pending = pending
        self.recorder = recorder
        self.scheduler_names = frozenset(scheduler_names)
        # Set by the scheduler: a deleted pod's uid (a pod waiting at Permit is rejected), and a cue that a
        # pending pod arrived (PreEnqueue plugins are asked again about the gated pods: a gang may be complete).
        self.on_unassigned_gone: Callable[[str], None] | None = None
        self.on_pending_added: Callable[[], None] | None = None
        # When a plugin watches v1/pods: kept from this informer (non-terminal pods, as kube-scheduler's own pod
        # informer, which plugins share there), not from a second watch of every pod.
        self.pod_store: ObjectStore | None = None

    def pod_changed(self, obj: dict[str, Any]) -> None:
        # The store first: a PreEnqueue plugin asked about this very pod counts it there.
        if self.pod_store is not None and (obj.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            self.pod_store.put(obj)
        super().pod_changed(obj)
        if self.pod_store is not None:
            self.queue.move_for_kind(POD_KIND)

    # -- pods ------------------------------------------------------------------------------------
    def pod_bound(self, obj: dict[str, Any], event: ClusterEvent) -> None:
        uid = (obj.get("metadata") or {}).get("uid", "")
        self.pending.drop(object_key(obj), uid)
        self.nominator.remove(uid)
        if event:  # pods counting others by label (affinity, topology spread) may fit now
            self.queue.move_for(event)

    def pod_unassigned(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = meta.get("uid", "")
        name = spec.get("schedulerName") or "default-scheduler"
        if name not in self.scheduler_names:
            return  # not ours: never touched
        key = object_key(obj)
        if meta.get("deletionTimestamp"):
            self.pending.drop(key, uid)
            self.nominator.remove(uid)
            return
        if self.cache.is_assumed(uid):
            return  # decided, bind in flight: the watch will show it bound
        if spec.get("schedulingGates"):
            # Pod scheduling readiness: not a candidate until every gate is removed (an update).
            self.pending.gate(key, uid)
            self.nominator.remove(uid)
            return
        self.pending.add(key, uid)
        try:
            pod = PodInfo.from_api(obj)
        except PodSpecError as err:
            # Queued like any pod so that only the leader reports it, from the scheduling cycle.
            pod = PodInfo.unreadable(obj, err)
        self.nominator.update(pod)
        self.queue.add(pod)
        if self.on_pending_added is not None:
            self.on_pending_added()

    def pod_deleted(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid", "")
        self.pending.drop(object_key(obj), uid)
        if self.on_unassigned_gone is not None:
            self.on_unassigned_gone(uid)
        removed = self.cache.remove_pod(uid)
        if self.pod_store is not None:
            self.pod_store.remove(obj)
            self.queue.move_for_kind(POD_KIND)
        self.pending.forget(uid)
        self.nominator.remove(uid)
        self.recorder.forget(uid)
        if removed is not None:
            self.queue.move_for(ClusterEvent.ASSIGNED_POD_DELETED)

    # -- nodes -----------------------------------------------------------------------------------
    def node_changed(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        known = self.cache.node(name)
        before = None if known is None else NodeProperties.of(known)
        after = NodeProperties.of(self.cache.add_node(obj))
        event = node_change(before, after)
        fields = (changed_fields(self.node_fields, before.raw, after.raw)
                  if before is not None and self.node_fields else frozenset())
        if event or fields:  # kubelet status heartbeats change nothing the plugins read: the queue stays
            self.queue.move_for(event, fields)

    # -- storage ---------------------------------------------------------------------------------
    def claim_changed(self, obj: dict[str, Any]) -> bool:
        changed = super().claim_changed(obj)
        if changed:  # bound, created, or its access modes changed: pods using it may fit now
            self.queue.move_for(ClusterEvent.PVC_CHANGED)
        return changed

    def volume_changed(self, obj: dict[str, Any]) -> bool:
        changed = super().volume_changed(obj)
        if changed:
            self.queue.move_for(ClusterEvent.PV_CHANGED)
        return changed

    def storage_class_changed(self, obj: dict[str, Any]) -> bool:
        changed = super().storage_class_changed(obj)
        if changed:
            self.queue.move_for(ClusterEvent.STORAGE_CLASS_CHANGED)
        return changed


POD_KIND = "v1/pods"  # a watched kind the pod informer serves (EventHandlers.pod_store)


def kind_informer(client: Client, store: ObjectStore, queue: SchedulingQueue, relists: Counter) -> Informer:
    """The informer of a kind plugins watch: it keeps ``store`` and, on every change, retries the pods the
    watching plugins rejected and asks the PreEnqueue plugins again about the gated ones."""
    resource = str(store.resource)

    def changed(obj: dict[str, Any]) -> None:
        store.put(obj)
        queue.move_for_kind(resource)

    def deleted(obj: dict[str, Any]) -> None:
        store.remove(obj)
        queue.move_for_kind(resource)

    return Informer(client, resource, store.resource.path, _Handler(changed, deleted),
                    on_relist=lambda cause: relists.labels(resource, cause).inc())


def budget_informer(client: Client, budgets: DisruptionBudgets, relists: Counter) -> Informer:
    """The PodDisruptionBudget informer feeding preemption's view of the budgets."""
    return Informer(client, "poddisruptionbudgets", PDB_PATH, _Handler(budgets.changed, budgets.deleted),
                    on_relist=lambda cause: relists.labels("poddisruptionbudgets", cause).inc())


_ObjectCallback = Callable[[dict[str, Any]], None]


class _Handler:
    """The informer's Handler: adds and updates go to one method (handlers read the whole object)."""

    def __init__(self, changed: _ObjectCallback, deleted: _ObjectCallback) -> None:
        self.on_add = self.on_update = changed
        self.on_delete = deleted
