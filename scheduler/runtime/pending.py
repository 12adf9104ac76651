"""The unassigned pods this scheduler serves and has yet to place.

``key -> uid`` of every such pod (a pod re-created under the same name has a new uid, so a decision about
the old one is recognised as stale), and the uids of those held back by ``spec.schedulingGates``. The event
handlers write it; the scheduling cycle and the binding outcome read it. Thread-safe.
"""

from __future__ import annotations

import threading

from scheduler.model import PodInfo
from scheduler.runtime.queue import SchedulingQueue


class PendingPods:
    def __init__(self, queue: SchedulingQueue) -> None:
        self._queue = queue
        self._lock = threading.Lock()
        self._uids: dict[str, str] = {}  # key -> uid
        self._gated: set[str] = set()  # uids waiting for their scheduling gates to clear

    def add(self, key: str, uid: str) -> None:
        with self._lock:
            self._uids[key] = uid
            self._gated.discard(uid)

    def drop(self, key: str, uid: str) -> None:
        """No longer ours to place (bound, deleted, gated, bound by someone else): out of the queue too."""
        with self._lock:
            if self._uids.get(key) != uid:
                return
            del self._uids[key]
        self._queue.delete(key)

    def contains(self, pod: PodInfo) -> bool:
        with self._lock:
            return self._uids.get(pod.key) == pod.uid

    def gate(self, key: str, uid: str) -> None:
        """The pod waits for spec.schedulingGates to clear: not a candidate until an update removes them."""
        self.drop(key, uid)
        with self._lock:
            self._gated.add(uid)

    def forget(self, uid: str) -> None:
        """The pod is gone: stop counting it as gated."""
        with self._lock:
            self._gated.discard(uid)

    def gated_count(self) -> int:
        with self._lock:
            return len(self._gated)
