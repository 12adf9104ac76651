"""List+watch of one resource, as client-go's reflector does it, feeding a handler.

- List (paginated with limit/continue: a consistent read from etcd), remember the list's
  resourceVersion, then watch from it with allowWatchBookmarks so quiet streams still advance it.
- A watch asks the server to end it after timeoutSeconds (20-30 s, randomised so a fleet of schedulers
  does not reconnect in step): re-watch from the last resourceVersion, no relist.
- A watch that hears nothing (no event, no bookmark, no end) for WATCH_SILENCE seconds is presumed dead
  (a partition that dropped packets without a FIN or RST) and replaced, like a dropped connection.
- A dropped connection: re-watch from the last resourceVersion after a backoff (0.8 s doubling to 30 s).
- 410 Gone, as an HTTP status or as an ERROR event carrying a Status with code 410 ("too old resource
  version"): relist, and diff the new list against what the handler has been told, emitting adds,
  updates and deletes (with a tombstone of the old object's identity), so no object is lost or
  reported twice. https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
- An object re-created under the same name with a new UID is reported as delete + add.

The handler is called from the informer's own thread, one event at a time, in watch order.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3

from scheduler.runtime.client import ApiError, Client, describe_forbidden

log = logging.getLogger(__name__)

# The bounds of a watch. kube-apiserver sends a bookmark about once a minute, and one 2 s before the
# watch's deadline, then ends the response at the deadline (k8s.io/apiserver
# pkg/storage/cacher/cache_watcher.go, nextBookmarkTime).
# With timeoutSeconds of 20-30 s a healthy watch therefore never goes more than 30 s without hearing
# something, however quiet the cluster: a silence of WATCH_SILENCE (40 s, 10 s of slack for a busy
# server) means the connection is dead. It is then replaced on a new connection about 41 s after its
# last byte, under the minute a silent connection may cost. The cost: one watch request per resource
# every 20-30 s, resumed from the bookmark's resourceVersion (no relist).
WATCH_SECONDS = (20, 30)
WATCH_SILENCE = 40.0


class Handler(Protocol):
    def on_add(self, obj: dict[str, Any]) -> None: ...
    def on_update(self, obj: dict[str, Any]) -> None: ...
    def on_delete(self, obj: dict[str, Any]) -> None: ...


@dataclass(slots=True)
class _Seen:
    uid: str
    resource_version: str


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def tombstone(key: str, seen: _Seen) -> dict[str, Any]:
    """The identity of an object deleted while we were not watching (we kept no copy of it)."""
    ns, _, name = key.rpartition("/")
    meta: dict[str, Any] = {"name": name, "uid": seen.uid, "resourceVersion": seen.resource_version}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta, "tombstone": True}


class Informer:
    def __init__(
        self,
        client: Client,
        resource: str,
        path: str,
        handler: Handler,
        *,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_seconds: tuple[int, int] = WATCH_SECONDS,
        silence: float = WATCH_SILENCE,
        on_relist: Callable[[str], None] = lambda cause: None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.path = path
        self.handler = handler
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.silence = silence
        self._on_relist = on_relist
        self._seen: dict[str, _Seen] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self._stop = threading.Event()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{resource}", daemon=True)
        self._backoff = _Backoff()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        resp = self._response
        if resp is not None:
            try:
                resp.shutdown()  # unblocks the watch read
            except OSError as exc:  # best effort on a socket that may be closing already
                log.debug("%s: closing the watch: %s", self.resource, exc)
        self._thread.join(5)

    # -- main loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self.relist("initial" if not self.synced.is_set() else "expired")
                    need_list = False
                self._watch()
                self._backoff.reset()
            except ApiError as err:
                if self._stop.is_set():
                    return
                if err.status == 410:
                    log.info(
                        "%s: resourceVersion %s expired (410 Gone): relisting",
                        self.resource,
                        self.resource_version,
                    )
                    need_list = True
                    continue
                delay = self._backoff.next()
                if err.status == 403:
                    log.error(describe_forbidden(err, "list/watch", self.resource))
                elif err.status == 401:
                    log.error(
                        "%s: the API server at %s rejected the credentials (401 Unauthorized): check "
                        "the kubeconfig's user or the service account token; retrying in %.1fs",
                        self.resource,
                        self.client.host,
                        delay,
                    )
                elif err.reason == "WatchSilent":
                    log.warning(
                        "%s: watch silent for %.0fs (no event or bookmark): presuming the connection "
                        "dead; resuming from resourceVersion %s on a new connection in %.1fs",
                        self.resource,
                        self.silence,
                        self.resource_version,
                        delay,
                    )
                elif err.reason == "WatchBroken":
                    log.info(
                        "%s: watch connection lost (%s); resuming from resourceVersion %s in %.1fs",
                        self.resource,
                        err.message,
                        self.resource_version,
                        delay,
                    )
                elif err.unreachable:
                    log.warning(
                        "cannot reach the Kubernetes API server at %s (%s %s): %s; retrying in %.1fs",
                        self.client.host,
                        err.verb,
                        self.resource,
                        err.message,
                        delay,
                    )
                else:
                    log.warning("%s: %s; retrying in %.1fs", self.resource, err, delay)
                self._stop.wait(delay)
            except Exception:  # a bug in a handler must not kill the watch forever
                delay = self._backoff.next()
                log.exception("%s informer failed; relisting in %.1fs", self.resource, delay)
                need_list = True
                self._stop.wait(delay)

    def _query(self) -> dict[str, Any]:
        return {"fieldSelector": self.field_selector} if self.field_selector else {}

    def relist(self, cause: str) -> None:
        """List everything and reconcile the handler's view with it."""
        items: list[dict[str, Any]] = []
        cont = None
        while True:
            q = self._query() | {"limit": self.page_size}
            if cont:
                q["continue"] = cont
            page = self.client.get(self.path, q, timeout=60.0)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                rv = meta.get("resourceVersion", "")
                break
        kind = self.resource[:1].upper() + self.resource[1:-1]
        self._reconcile(items, kind)
        self.resource_version = rv
        if self.synced.is_set():
            self._on_relist(cause)
        log.info("%s: listed %d at resourceVersion %s (%s)", self.resource, len(items), rv, cause)
        self.synced.set()

    def _reconcile(self, items: list[dict[str, Any]], kind: str) -> None:
        fresh: dict[str, dict[str, Any]] = {}
        for obj in items:
            obj.setdefault("kind", kind)  # list items carry no kind; handlers may want it
            fresh[object_key(obj)] = obj
        for key in [k for k in self._seen if k not in fresh]:
            self._call(self.handler.on_delete, tombstone(key, self._seen.pop(key)))
        for key, obj in fresh.items():
            self._deliver("ADDED", key, obj)

    def _call(self, method: Callable[[dict[str, Any]], None], obj: dict[str, Any]) -> None:
        """One handler call; an object the handler chokes on is logged and skipped, never a relist loop."""
        try:
            method(obj)
        except Exception:
            log.exception("%s: handling %s failed; skipping this event", self.resource, object_key(obj))

    def _deliver(self, etype: str, key: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid, rv = meta.get("uid", ""), meta.get("resourceVersion", "")
        seen = self._seen.get(key)
        if etype == "DELETED":
            if seen is not None:
                del self._seen[key]
            self._call(self.handler.on_delete, obj)
            return
        if seen is not None and seen.uid != uid:
            self._call(self.handler.on_delete, tombstone(key, seen))  # re-created under the same name
            seen = None
        self._seen[key] = _Seen(uid, rv)
        if seen is None:
            self._call(self.handler.on_add, obj)
        elif seen.resource_version != rv:
            self._call(self.handler.on_update, obj)

    def _watch(self) -> None:
        timeout = random.randint(*self.watch_seconds)
        q = self._query() | {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout,
        }
        for event in self.client.watch_lines(self.path, q, read_timeout=self.silence, on_open=self._opened):
            if self._stop.is_set():
                return
            etype = event.get("type")
            obj = event.get("object") or {}
            if etype == "ERROR":
                code = obj.get("code", 0)
                raise ApiError(
                    code, obj.get("reason", ""), obj.get("message", ""), verb="WATCH", path=self.path
                )
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if etype != "BOOKMARK":
                self._deliver(etype, object_key(obj), obj)
            if rv:
                self.resource_version = rv
            self._backoff.reset()

    def _opened(self, resp: urllib3.BaseHTTPResponse | None) -> None:
        self._response = resp


class _Backoff:
    """0.8 s doubling to 30 s with jitter (client-go's reflector backoff manager)."""

    def __init__(self, first: float = 0.8, cap: float = 30.0) -> None:
        self.first, self.cap, self._next = first, cap, first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay * random.uniform(1.0, 1.5)

    def reset(self) -> None:
        self._next = self.first
