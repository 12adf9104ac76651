"""In-memory object store with one global resourceVersion and a bounded change history.

Semantics kept from etcd3 behind the real API server
(https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions and
#efficient-detection-of-changes):
- one cluster-wide, monotonically increasing revision; every create/update/delete takes the next one
  and stamps it into metadata.resourceVersion (deleted objects carry the deletion's revision);
- an update that changes nothing is not written and keeps its resourceVersion (GuaranteedUpdate in
  k8s.io/apiserver/pkg/storage/etcd3/store.go skips identical objects);
- history of changes is kept for a window (etcd compaction); watching from a revision older than the
  window fails with 410 Expired "too old resource version: N (M)" (watch cache,
  k8s.io/apiserver/pkg/storage/cacher/watch_cache.go). The window here is `history_limit` events
  or whatever `compact()` leaves.

Stored objects are never mutated in place: every change builds a new dict, so history entries,
list results and watchers can share them without copying.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import storage_names

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


def now_rfc3339(later_seconds: int = 0) -> str:
    """metav1.Time on the wire: RFC 3339 in UTC, whole seconds."""
    return (datetime.now(UTC) + timedelta(seconds=later_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Change:
    """One entry of the change history, as a watcher sees it."""

    rv: int
    storage: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    prev: Obj | None  # object before the change (None for ADDED): needed for selector transitions
    line: bytes | None = None  # the encoded watch event, shared by watchers that see it unchanged


class Store:
    def __init__(self, history_limit: int = 200_000) -> None:
        self._cond = threading.Condition()
        self._rv = 1
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._log: list[Change] = []
        self._compacted_rv = self._rv  # history holds every change with rv > _compacted_rv
        self.history_limit = history_limit
        self.watch_epoch = 0  # bumped by drop_watches(); open watches end when it changes

    # ---- reads -------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    @property
    def compacted_rv(self) -> int:
        with self._cond:
            return self._compacted_rv

    def get(self, storage: str, namespace: str, name: str) -> Obj | None:
        with self._cond:
            return self._objects.get(storage, {}).get((namespace, name))

    def list(self, storage: str, namespace: str | None = None) -> tuple[list[Obj], int]:
        """All objects of a type (optionally one namespace) sorted by key, and the list's revision."""
        with self._cond:
            table = dict(self._objects.get(storage, {}))
            rv = self._rv
        return _in_key_order(table, namespace), rv

    def list_at(self, storage: str, namespace: str | None, rv: int) -> list[Obj] | None:
        """Objects of a type as they were at revision `rv` (an MVCC read), sorted by key;
        None when `rv` is older than the kept history. Rebuilt by undoing later changes."""
        with self._cond:
            if rv < self._compacted_rv:
                return None
            table = dict(self._objects.get(storage, {}))
            for change in reversed(self._log[max(rv - self._compacted_rv, 0):]):
                if change.storage != storage:
                    continue
                meta = change.obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                if change.prev is None:
                    table.pop(key, None)
                else:
                    table[key] = change.prev
        return _in_key_order(table, namespace)

    def namespaced_keys(self, namespace: str) -> list[tuple[str, Key]]:
        with self._cond:
            return [(storage, key) for storage, table in self._objects.items()
                    for key in table if key[0] == namespace]

    # ---- writes ------------------------------------------------------------------------------
    def _current_locked(self, storage: str, namespace: str, name: str) -> Obj:
        current = self._objects.get(storage, {}).get((namespace, name))
        if current is None:
            plural, group = storage_names(storage)
            raise StatusError.not_found(plural, name, group)
        return current

    def _stamp(self, obj: Obj, rv: int) -> Obj:
        return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(rv)}}

    def _record(self, storage: str, kind: str, obj: Obj, prev: Obj | None) -> None:
        self._log.append(Change(self._rv, storage, kind, obj, prev))
        if len(self._log) > self.history_limit:
            self._compact_locked(self._log[len(self._log) - self.history_limit * 3 // 4].rv - 1)
        self._cond.notify_all()

    def create(self, storage: str, obj: Obj) -> Obj:
        """Insert a new object; fills uid and creationTimestamp if absent; 409 if the name is taken."""
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        with self._cond:
            table = self._objects.setdefault(storage, {})
            if key in table:
                plural, group = storage_names(storage)
                raise StatusError.already_exists(plural, key[1], group)
            self._rv += 1
            meta = {**meta, "resourceVersion": str(self._rv)}
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            stored = {**obj, "metadata": meta}
            table[key] = stored
            self._record(storage, "ADDED", stored, None)
            return stored

    def update(self, storage: str, namespace: str, name: str, mutate: Callable[[Obj], Obj]) -> Obj:
        """Atomically replace an object with mutate(current); 404 if missing.

        `mutate` runs under the store lock (like etcd's GuaranteedUpdate callback) and may raise
        StatusError for conflicts; it must return a new dict and leave `current` untouched.
        """
        with self._cond:
            current = self._current_locked(storage, namespace, name)
            new = mutate(current)
            if _same_content(new, current):
                return current
            self._rv += 1
            stored = self._stamp(new, self._rv)
            self._objects[storage][(namespace, name)] = stored
            self._record(storage, "MODIFIED", stored, current)
            return stored

    def delete(self, storage: str, namespace: str, name: str,
               check: Callable[[Obj], None] | None = None) -> Obj:
        """Remove an object; `check(current)` may raise (delete preconditions). Returns the last state."""
        with self._cond:
            current = self._current_locked(storage, namespace, name)
            if check is not None:
                check(current)
            del self._objects[storage][(namespace, name)]
            self._rv += 1
            # The DELETED watch event carries the object with the deletion's revision.
            stored = self._stamp(current, self._rv)
            self._record(storage, "DELETED", stored, current)
            return stored

    # ---- history and watch -------------------------------------------------------------------
    def _compact_locked(self, upto_rv: int) -> None:
        upto_rv = min(max(upto_rv, self._compacted_rv), self._rv)
        drop = upto_rv - self._compacted_rv
        if drop > 0:
            del self._log[:drop]
            self._compacted_rv = upto_rv
            self._cond.notify_all()

    def compact(self, upto_rv: int | None = None) -> int:
        """Forget history up to `upto_rv` (default: everything so far). Returns the compacted revision."""
        with self._cond:
            self._compact_locked(self._rv if upto_rv is None else upto_rv)
            return self._compacted_rv

    def drop_watches(self) -> None:
        with self._cond:
            self.watch_epoch += 1
            self._cond.notify_all()

    def check_watchable(self, after_rv: int) -> None:
        with self._cond:
            if after_rv < self._compacted_rv:
                raise StatusError.expired(f"too old resource version: {after_rv} ({self._compacted_rv})")

    def changes_after(self, after_rv: int, timeout: float, epoch: int) -> list[Change] | None:
        """Changes with rv > after_rv, waiting up to `timeout` for one.

        Returns None when the watch must end: watches were dropped, or history this watcher has
        not read yet was compacted away (the real server likewise closes a watcher that falls
        too far behind; the client re-watches and gets 410).
        """
        with self._cond:
            if self._rv <= after_rv and self.watch_epoch == epoch and after_rv >= self._compacted_rv:
                self._cond.wait(timeout)
            if self.watch_epoch != epoch or after_rv < self._compacted_rv:
                return None
            start = after_rv - self._compacted_rv
            return self._log[start:] if start < len(self._log) else []

    def snapshot(self, storage: str) -> tuple[list[Obj], int]:
        """Current objects and the revision they are current at (initial events of a watch)."""
        with self._cond:
            return list(self._objects.get(storage, {}).values()), self._rv


def _in_key_order(table: dict[Key, Obj], namespace: str | None) -> list[Obj]:
    """The objects of one namespace (all when None/""), sorted by (namespace, name)."""
    return [table[k] for k in sorted(k for k in table if not namespace or k[0] == namespace)]


def _same_content(a: Obj, b: Obj) -> bool:
    if a is b:
        return True
    ma, mb = a.get("metadata", {}), b.get("metadata", {})
    if {k: v for k, v in ma.items() if k != "resourceVersion"} != \
       {k: v for k, v in mb.items() if k != "resourceVersion"}:
        return False
    return {k: v for k, v in a.items() if k != "metadata"} == {k: v for k, v in b.items() if k != "metadata"}
