"""HTTP/1.1 framing: requests to Api calls, JSON responses, chunked watch streams.

Watch responses are newline-delimited JSON events `{"type": ..., "object": ...}` in one chunked
HTTP 200 response (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes);
an expired start revision is an ERROR event holding a Status (code 410, reason Expired) inside a
200 response, as the watch cache answers (cacher.go: "treat the watch as successful" and send the
error as an event). Each event is a chunk of its own, as kube-apiserver sends them
(../shared/reference/kube-apiserver-v1.36.2/watch-pods.http).

Other answers are framed as Go's net/http frames kube-apiserver's: a body of up to 2,048 bytes
(bufferBeforeChunkingSize) with Content-Length, a longer one chunked; with the headers a real server sends
(Audit-Id, Cache-Control, the priority-and-fairness uids).
"""

from __future__ import annotations

import dataclasses
import json
import select
import socket
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from kubeapi_testserver.api import to_wire
from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.managed_fields import manager_of
from kubeapi_testserver.patches import APPLY_PATCH
from kubeapi_testserver.pod_logs import log_target
from kubeapi_testserver.routes import Route, int_param, parse, query_bool, verb_of
from kubeapi_testserver.watching import WatchPlan, watch_event

if TYPE_CHECKING:
    from kubeapi_testserver.api import Api
    from kubeapi_testserver.request_log import RequestRecord


class HandlerHost(Protocol):
    """What the request handler asks of the server that made it (``KubeApiServer``): its API, its request log,
    its injected faults and its connection and watch counts."""

    api: Api

    def track_connection(self, conn: socket.socket, opened: bool) -> None: ...
    def authorized(self, header: str | None) -> bool: ...
    def begin_request(self, method: str, path: str) -> RequestRecord: ...
    def before_serving(self, rec: RequestRecord) -> None: ...
    def maybe_fail(self, rec: RequestRecord) -> None: ...
    def fixed_response(self, path: str) -> Any: ...
    def watch_opened(self) -> None: ...
    def watch_closed(self) -> None: ...

_JSON = "application/json"
_CHUNKING_THRESHOLD = 2048  # net/http bufferBeforeChunkingSize
# The API Priority and Fairness headers of a real answer (the flow schema and priority level that served it).
_FAIRNESS = (("X-Kubernetes-Pf-Flowschema-Uid", str(uuid.uuid4())),
             ("X-Kubernetes-Pf-Prioritylevel-Uid", str(uuid.uuid4())))


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class KubeApiRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # header and body are separate writes: avoid the 40 ms delayed-ACK stall
    server_version = "kubelab-test-apiserver"
    api_server: HandlerHost  # set on the subclass made per server (KubeApiServer)

    # Quiet: the test server must not spam pytest output.
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.api_server.track_connection(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.api_server.track_connection(self.connection, False)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # ---- plumbing ----------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_api_headers(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", _JSON)
        for key, value in _FAIRNESS:
            self.send_header(key, value)

    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = _dumps(body)
        self._send_api_headers(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if len(data) > _CHUNKING_THRESHOLD:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        raw = self._read_body()
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        server = self.api_server
        record = server.begin_request(method, url.path)
        try:
            if not server.authorized(self.headers.get("Authorization")):
                raise StatusError.unauthorized()
            fixed = server.fixed_response(url.path)
            if fixed is not None:
                record.finish(200)
                self._send_json(200, fixed)
                return
            route = parse(url.path, server.api.custom_type)
            watch = query_bool(query, "watch")
            verb = verb_of(method, route, watch)
            record.describe(verb, route)
            server.before_serving(record)
            server.maybe_fail(record)
            if verb == "watch":
                self._watch(route, query, record)
                return
            if route.subresource == "log" and verb == "get":
                self._pod_log(route, query, record)
                return
            code, body = self._call(method, verb, route, query, raw)
            record.finish(code)
            self._send_json(code, body)
        except StatusError as err:
            record.finish(err.code)
            self._send_json(err.code, err.body, err.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - a server bug must reach the client as a 500
            record.finish(500)
            err = StatusError.internal(f"test server error: {type(exc).__name__}: {exc}")
            self._send_json(500, err.body)

    def _call(self, method: str, verb: str, route: Route, query: dict[str, str], raw: bytes) -> tuple[int, Any]:
        api = self.api_server.api
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise StatusError.bad_request(f"invalid JSON in request body: {exc}") from exc
        if route.rtype is None or route.subresource == "binding":
            if verb != "create":
                raise StatusError.method_not_allowed(f"the server does not allow this method on the requested "
                                                  f"resource ({method})")
            return 201, api.bind(route, body)
        if verb == "get":
            return 200, api.get(route)
        if verb == "list":
            return 200, api.list(route, query)
        manager = manager_of(self.headers.get("User-Agent"))
        if verb == "create":
            if route.name is not None:
                raise StatusError.method_not_allowed("the server does not allow this method on the requested "
                                                  "resource")
            return 201, api.create(route, body, manager)
        if verb == "update":
            return 200, api.update(route, body, manager)
        if verb == "patch":
            content_type = self.headers.get("Content-Type") or ""
            if content_type.startswith(APPLY_PATCH):
                return api.apply(route, body, query.get("fieldManager") or "")
            return 200, api.patch(route, content_type, body, manager)
        if verb == "delete":
            return 200, api.delete(route, body, query)
        if verb == "deletecollection":
            return 200, api.delete_collection(route, query)
        raise StatusError.method_not_allowed(f"unsupported method {method}")

    # ---- pods/log (kubeapi_testserver/pod_logs.py) ------------------------------------------------
    def _pod_log(self, route: Route, query: dict[str, str], record: RequestRecord) -> None:
        server = self.api_server
        pod_route = dataclasses.replace(route, subresource=None)
        target = log_target(server.api.get(pod_route), query)  # 404 for a missing pod, 400s as the server's
        since = time.time() - int_param(query, "sinceSeconds") if query.get("sinceSeconds") else None
        record.finish(200)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if target is None or not query_bool(query, "follow"):
            lines = server.pod_logs.read((route.namespace, route.name, *target), 0, since)[0] if target else []
            data = "".join(line + "\n" for line in lines).encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        key = (route.namespace, route.name, *target)
        seen = 0
        try:
            while True:
                lines, seen, ended = server.pod_logs.read(key, seen, since)
                if lines:
                    self._write_chunk("".join(line + "\n" for line in lines).encode())
                if ended or self._client_gone() or server.store.get("pods", route.namespace, route.name) is None:
                    break
                server.pod_logs.wait(key, seen, 1.0)
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    # ---- watch -------------------------------------------------------------------------------
    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write_events(self, lines: list[bytes]) -> None:
        """One chunk per event, as kube-apiserver frames a watch, written to the socket in one call."""
        self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(line), line) for line in lines))

    def _watch(self, route: Route, query: dict[str, str], record: RequestRecord) -> None:
        server = self.api_server
        api = server.api
        epoch = server.store.watch_epoch
        plan = api.plan_watch(route, query)
        bookmarks = query_bool(query, "allowWatchBookmarks")
        # https://kubernetes.io/docs/reference/kubernetes-api/common-parameters/common-parameters/#timeoutseconds
        timeout = int_param(query, "timeoutSeconds") or server.default_watch_timeout
        deadline = time.monotonic() + timeout
        record.finish(200)
        self._send_api_headers(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        server.watch_opened()
        try:
            if plan.error is not None:
                self._write_chunk(_dumps({"type": "ERROR", "object": plan.error.body}) + b"\n")
            else:
                ended_cleanly = self._stream(plan, bookmarks, deadline, epoch)
                if not ended_cleanly:
                    # drop_watches(graceful=False): cut the connection mid-stream like a network failure.
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
            self._write_chunk(b"")  # terminating chunk (empty data) ends the response
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            server.watch_closed()

    def _bookmark(self, plan: WatchPlan, rv: int, initial_end: bool = False) -> bytes:
        """https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks : an object of the
        watched kind holding only metadata.resourceVersion (the progress of this watch); the end of the
        initial events of a streaming list is marked with the k8s.io/initial-events-end annotation."""
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": plan.rtype.kind, "apiVersion": plan.rtype.api_version, "metadata": meta}
        return _dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def _stream(self, plan: WatchPlan, bookmarks: bool, deadline: float, epoch: int) -> bool:
        """Send events until the deadline. False if the watch was dropped abruptly by a test hook."""
        server = self.api_server
        rtype = plan.rtype
        if plan.initial:
            self._write_events([_dumps({"type": "ADDED", "object": to_wire(rtype, o)}) + b"\n"
                                for o in plan.initial])
        if plan.initial_events_end and bookmarks:
            self._write_chunk(self._bookmark(plan, plan.start_rv, initial_end=True))
        cursor = plan.start_rv
        last_sent = time.monotonic()
        # The watch cache sends a bookmark 2 s before a watch's deadline (none for a watch shorter than
        # that) besides its periodic ones: k8s.io/apiserver pkg/storage/cacher/cache_watcher.go,
        # nextBookmarkTime ("right before the watcher timeout - for now we simply set it 2s before").
        pre_timeout = deadline - 2.0
        pre_timeout_sent = pre_timeout <= last_sent
        # other representations (events.k8s.io, a custom resource's other versions) are encoded per watcher
        shareable = rtype.group != "events.k8s.io" and (not rtype.custom or rtype.version == rtype.storage_version)
        while True:
            now = time.monotonic()
            if now >= deadline:
                return True
            if bookmarks and not pre_timeout_sent and now >= pre_timeout:
                self._write_chunk(self._bookmark(plan, cursor))
                last_sent, pre_timeout_sent = now, True
            # Wake at least every second to notice clients that went away while nothing changed.
            wait = min(deadline - now, 1.0)
            if bookmarks:
                wait = min(wait, server.bookmark_interval)
                if not pre_timeout_sent:
                    wait = min(wait, pre_timeout - now)
            changes = server.store.changes_after(cursor, wait, epoch)
            if changes is None:
                return server.drop_graceful
            lines = []
            for change in changes:
                event = watch_event(plan, change)
                if event is None:
                    continue
                if shareable and event[0] == change.type and event[1] is change.obj:
                    if change.line is None:
                        change.line = _dumps({"type": change.type, "object": change.obj}) + b"\n"
                    lines.append(change.line)
                else:
                    lines.append(_dumps({"type": event[0], "object": to_wire(rtype, event[1])}) + b"\n")
            if changes:
                cursor = changes[-1].rv
            if lines:
                self._write_events(lines)
                last_sent = time.monotonic()
            elif bookmarks and time.monotonic() - last_sent >= server.bookmark_interval:
                self._write_chunk(self._bookmark(plan, cursor))
                last_sent = time.monotonic()
            elif self._client_gone():
                return True
            if rtype.custom and server.api.custom_type(rtype.group, rtype.version, rtype.plural) is None:
                return True  # its CRD was deleted (after its objects, whose DELETED events were sent)

    def _client_gone(self) -> bool:
        """True when the client closed its end (readable socket with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
