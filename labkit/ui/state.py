"""What the page shows, kept current from the cluster's watches: a summary of every node and pod, each pod's
last FailedScheduling message and whether it was preempted. Fed by the scheduler's own informers
(scheduler.runtime.informer: list+watch with resourceVersion, re-watch, relist on 410), one thread per
resource; every change is handed to the listeners as ("node" | "pod", key, summary or None when gone).

Requests are the scheduler's own reading of a pod (PodInfo.from_api, leniently, as its cache reads bound
pods), so the bars show what the scheduler counts; terminal pods hold no place and are left out.

In a cluster serving resource.k8s.io/v1 the ResourceSlices and ResourceClaims are watched too, and each node's
summary lists its DRA devices and the claims holding them (devices.py); slice and claim changes arriving
together are told as one change of the nodes whose devices they changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from labkit.ui.devices import Devices
from scheduler.model import LENIENT, PodInfo, PodSpecError
from scheduler.model.node import NodeInfo
from scheduler.runtime.client import Client
from scheduler.runtime.eventhandlers import TERMINAL_PHASES
from scheduler.runtime.informer import Informer

Change = tuple[str, str, dict[str, Any] | None]
Listener = Callable[[list[Change]], None]

ROLE_PREFIX = "node-role.kubernetes.io/"
ZONE_LABEL = "topology.kubernetes.io/zone"
PREEMPTED_REASON = "Preempted"
FAILED_REASON = "FailedScheduling"
DRA_PATH = "/apis/resource.k8s.io/v1"
DEVICES_SETTLE_SECONDS = 0.05  # slice and claim changes within this are looked at together


def node_summary(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    labels = meta.get("labels") or {}
    roles = sorted(k[len(ROLE_PREFIX):] for k in labels if k.startswith(ROLE_PREFIX)) or ["worker"]
    try:
        alloc = NodeInfo.from_api(obj).allocatable
        allocatable = {"cpu": alloc.milli_cpu, "memory": alloc.memory, "pods": alloc.pods}
    except (PodSpecError, ValueError):  # an unreadable quantity: the scheduler would not use the node either
        allocatable = {"cpu": 0, "memory": 0, "pods": 0}
    ready = next((c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
                  if c.get("type") == "Ready"), None)
    return {"name": meta.get("name", ""), "role": ",".join(roles), "zone": labels.get(ZONE_LABEL, ""),
            "labels": dict(sorted(labels.items())),  # all of them: the page groups and searches by any
            "taints": [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                       for t in spec.get("taints") or []],
            "unschedulable": bool(spec.get("unschedulable")), "ready": ready, "allocatable": allocatable}


def pod_summary(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    try:
        requests = PodInfo.from_api(obj, LENIENT, keep_object=False).requests
        cpu, memory = requests.milli_cpu, requests.memory
    except PodSpecError:
        cpu = memory = 0
    conditions = status.get("conditions") or []
    return {"key": f"{meta.get('namespace', '')}/{meta.get('name', '')}", "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""), "node": spec.get("nodeName") or "",
            "scheduler": spec.get("schedulerName") or "default-scheduler", "priority": spec.get("priority") or 0,
            "phase": status.get("phase") or "Pending", "nominated": status.get("nominatedNodeName") or "",
            "cpu": cpu, "memory": memory,
            "disruption": any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                              for c in conditions)}


class _Adapter:
    def __init__(self, changed: Callable[[dict[str, Any]], None], deleted: Callable[[dict[str, Any]], None]):
        self.on_add = self.on_update = changed
        self.on_delete = deleted


class ClusterState:
    """Nodes and pods as the page shows them; thread-safe (the informers call in from their own threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self._failed: dict[str, tuple[str, str]] = {}  # pod key -> (event time, message), the newest kept
        self._preempted: set[str] = set()  # pod keys with a Preempted event
        self.listeners: list[Listener] = []
        self.devices = Devices()
        self._devices_timer: threading.Timer | None = None

    # -- reading -----------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"nodes": list(self.nodes.values()), "pods": [self._decorated(k) for k in self.pods]}

    def _decorated(self, key: str) -> dict[str, Any]:
        pod = dict(self.pods[key])
        pod["failed"] = self._failed.get(key, ("", ""))[1]
        pod["preempted"] = pod["disruption"] or key in self._preempted
        return pod

    # -- informer handlers ---------------------------------------------------------------------------
    def node_changed(self, obj: dict[str, Any]) -> None:
        summary = node_summary(obj)
        with self._lock:
            summary["devices"] = self.devices.on_node(summary["name"], summary["labels"])
            self.nodes[summary["name"]] = summary
        self._tell([("node", summary["name"], summary)])

    def node_deleted(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        with self._lock:
            self.nodes.pop(name, None)
        self._tell([("node", name, None)])

    def pod_changed(self, obj: dict[str, Any]) -> None:
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.pod_deleted(obj)
            return
        summary = pod_summary(obj)
        with self._lock:
            self.pods[summary["key"]] = summary
            change = self._decorated(summary["key"])
        self._tell([("pod", summary["key"], change)])

    def pod_deleted(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        with self._lock:
            self.pods.pop(key, None)
            self._failed.pop(key, None)
            self._preempted.discard(key)
        self._tell([("pod", key, None)])

    def event_changed(self, obj: dict[str, Any]) -> None:
        """A pod's FailedScheduling (the newest message wins) or Preempted event, shown on the pod."""
        reason = obj.get("reason")
        involved = obj.get("involvedObject") or obj.get("regarding") or {}
        if reason not in (FAILED_REASON, PREEMPTED_REASON) or involved.get("kind") != "Pod":
            return
        key = f"{involved.get('namespace', '')}/{involved.get('name', '')}"
        when = obj.get("lastTimestamp") or obj.get("eventTime") or ""
        with self._lock:
            if reason == PREEMPTED_REASON:
                self._preempted.add(key)
            elif when >= self._failed.get(key, ("", ""))[0]:
                self._failed[key] = (when, obj.get("message") or obj.get("note") or "")
            change = self._decorated(key) if key in self.pods else None
        if change is not None:
            self._tell([("pod", key, change)])

    def event_deleted(self, obj: dict[str, Any]) -> None:
        """Events expire (an hour by default): what they said stays shown while the pod lives."""

    def _devices_changed(self, store: str, obj: dict[str, Any], gone: bool) -> None:
        """A ResourceSlice or ResourceClaim changed: kept, and the nodes' devices looked at again shortly,
        once for all the changes arriving together (a first list delivers every slice one by one)."""
        with self._lock:
            target = self.devices.slices if store == "slices" else self.devices.claims
            if gone:
                target.remove(obj)
            else:
                target.put(obj)
            if self._devices_timer is None:
                self._devices_timer = threading.Timer(DEVICES_SETTLE_SECONDS, self.flush_devices)
                self._devices_timer.daemon = True
                self._devices_timer.start()

    def flush_devices(self) -> None:
        """Tell the nodes whose devices the slice and claim changes so far changed."""
        with self._lock:
            if self._devices_timer is not None:
                self._devices_timer.cancel()
                self._devices_timer = None
            changes: list[Change] = []
            for name, summary in self.nodes.items():
                devices = self.devices.on_node(name, summary["labels"])
                if devices != summary.get("devices"):
                    summary = self.nodes[name] = {**summary, "devices": devices}
                    changes.append(("node", name, summary))
        if changes:
            self._tell(changes)

    def _tell(self, changes: list[Change]) -> None:
        for listener in list(self.listeners):
            listener(changes)

    # -- the watches ---------------------------------------------------------------------------------
    def informers(self, client: Client, dra: bool = False) -> list[Informer]:
        """List+watch of nodes, pods and events feeding this state (start them; stop them at the end), and
        with ``dra`` (the API server serves resource.k8s.io/v1) of ResourceSlices and ResourceClaims."""
        found = [Informer(client, "nodes", "/api/v1/nodes", _Adapter(self.node_changed, self.node_deleted)),
                 Informer(client, "pods", "/api/v1/pods", _Adapter(self.pod_changed, self.pod_deleted)),
                 Informer(client, "events", "/api/v1/events", _Adapter(self.event_changed, self.event_deleted))]
        if dra:
            for store, resource in (("slices", "resourceslices"), ("claims", "resourceclaims")):
                found.append(Informer(client, resource, f"{DRA_PATH}/{resource}", _Adapter(
                    lambda obj, store=store: self._devices_changed(store, obj, False),
                    lambda obj, store=store: self._devices_changed(store, obj, True))))
        return found
