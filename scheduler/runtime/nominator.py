"""Pods waiting for the room a preemption made for them (kube-scheduler's PodNominator).

A pod this scheduler serves is nominated to a node when its preemption chose that node (set here at once,
before the API has the pod's status.nominatedNodeName) or when the watch shows the field set. While it waits,
the pods nominated to a node with at least the priority of the pod being placed count on that node, so a
lower-priority pod does not take the freed room. A nomination ends when the pod is bound, deleted or gated,
or when this scheduler clears it, or when a watch update removes the field. A watch update without the
field, whose previous version lacked it too, leaves an in-memory nomination as it is (the update may
predate the patch that sets it), as kube-scheduler's UpdateNominatedPod does. Thread-safe: the informer
thread writes, the scheduling loop reads and writes.
"""

from __future__ import annotations

import threading

from scheduler.framework import NO_NOMINATED, Nominated
from scheduler.model import PodInfo


class Nominator:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_node: dict[str, dict[str, PodInfo]] = {}  # node -> uid -> pod
        self._node_of: dict[str, str] = {}  # uid -> node
        self._status_of: dict[str, str] = {}  # uid -> status.nominatedNodeName of the last version watched

    def nominate(self, pod: PodInfo, node: str) -> None:
        """``pod`` waits for room on ``node`` (replacing any earlier nomination)."""
        with self._lock:
            self._nominate(pod, node)

    def update(self, pod: PodInfo) -> None:
        """A new version of a waiting pod from the watch: nominated where its status says; without the field,
        where it already was (with the new object) unless the previous version had the field (removed: the
        nomination ends)."""
        with self._lock:
            previous = self._status_of.get(pod.uid, "")
            self._status_of[pod.uid] = pod.nominated_node_name
            node = pod.nominated_node_name or ("" if previous else self._node_of.get(pod.uid, ""))
            if node:
                self._nominate(pod, node)
            else:
                self._remove(pod.uid)

    def remove(self, uid: str) -> None:
        with self._lock:
            self._remove(uid)
            self._status_of.pop(uid, None)

    def node_of(self, uid: str) -> str | None:
        with self._lock:
            return self._node_of.get(uid)

    def lower_priority_on(self, node: str, priority: int) -> list[PodInfo]:
        """The pods nominated to ``node`` with a priority below ``priority`` (their nomination no longer holds
        once a more important pod is nominated there)."""
        with self._lock:
            return [p for p in self._by_node.get(node, {}).values() if p.priority < priority]

    def for_pod(self, pod: PodInfo) -> Nominated:
        """The nominated pods that count when placing ``pod``: at least its priority, not itself."""
        if not self._node_of:  # the common case: nothing nominated, nothing to copy
            return NO_NOMINATED
        with self._lock:
            out: dict[str, list[PodInfo]] = {}
            for node, pods in self._by_node.items():
                counted = [p for p in pods.values() if p.priority >= pod.priority and p.uid != pod.uid]
                if counted:
                    out[node] = counted
            return out

    def _nominate(self, pod: PodInfo, node: str) -> None:
        self._remove(pod.uid)
        self._by_node.setdefault(node, {})[pod.uid] = pod
        self._node_of[pod.uid] = node

    def _remove(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node[node]
        del pods[uid]
        if not pods:
            del self._by_node[node]
