"""KubeApiServer: the HTTP server object plus the in-process test hooks."""

from __future__ import annotations

import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from kubeapi_testserver import custom_resources, strategies
from kubeapi_testserver.api import Api
from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.http_handler import KubeApiRequestHandler
from kubeapi_testserver.kinds import RESOURCES, ResourceType, storage_type
from kubeapi_testserver.kubeconfig import write_kubeconfig
from kubeapi_testserver.objects import make_node, make_pod, node_ready_condition
from kubeapi_testserver.patches import strategic_merge_patch
from kubeapi_testserver.pod_logs import PodLogs
from kubeapi_testserver.request_log import RequestRecord
from kubeapi_testserver.store import Obj, Store

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
# Discovery document path -> its group/version: /api/v1, /apis/coordination.k8s.io/v1, ...
_GROUP_VERSION_PATHS = {("/apis/" if r.group else "/api/") + r.api_version: r.api_version for r in RESOURCES}


@dataclass(slots=True)
class FailureRule:
    remaining: int
    code: int
    path: re.Pattern[str] | None
    method: str | None
    verb: str | None
    resource: str | None
    message: str | None
    reason: str | None
    retry_after: int | None

    def matches(self, rec: RequestRecord) -> bool:
        if self.method and self.method != rec.method:
            return False
        if self.verb and self.verb != rec.verb:
            return False
        if self.resource and self.resource not in (rec.resource, rec.resource.split("/")[0]):
            return False
        return not (self.path and not self.path.search(rec.path))


@dataclass(slots=True)
class RequestHook:
    """An action run just before matching requests are served (see KubeApiServer.before_next)."""

    remaining: int
    action: Callable[[RequestRecord], None]
    match: FailureRule


# What etcd's client reports while etcd is down (grpc status Unavailable), as kube-apiserver passes it on.
ETCD_UNAVAILABLE = ('rpc error: code = Unavailable desc = connection error: desc = "transport: Error while '
                    'dialing: dial tcp 127.0.0.1:2379: connect: connection refused"')


class _QuietThreadingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients dropping keep-alive connections is normal; anything else is worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class KubeApiServer:
    """A Kubernetes API test server on 127.0.0.1 (see the package docstring for the full API)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None,
                 history_limit: int = 200_000, bookmark_interval: float = 5.0,
                 default_watch_timeout: float = 1800.0, user: str = "system:anonymous",
                 graceful_pod_deletion: bool = False) -> None:
        self.host, self.port = host, port
        self.token = token
        self.user = user
        self.store = Store(history_limit)
        self.api = Api(self.store)
        self.api.graceful_pod_deletion = graceful_pod_deletion
        self.pod_logs = PodLogs()
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.drop_graceful = False
        self._rules: list[FailureRule] = []
        self._hooks: list[RequestHook] = []
        self._outage: str | None = None  # None, "unavailable" or "hang" (storage_outage)
        self._storage_back = threading.Event()
        self._storage_back.set()
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._open_watches = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for ns in SYSTEM_NAMESPACES:
            self.add_namespace(ns)

    # ---- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> KubeApiServer:
        handler = type("BoundHandler", (KubeApiRequestHandler,), {"api_server": self})
        httpd = _QuietThreadingHTTPServer((self.host, self.port), handler)
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"kubeapi:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.drop_graceful = False
        self.storage_restored()  # requests held by a "hang" outage end with the server
        self.store.drop_watches()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        return write_kubeconfig(path, self.url, token=self.token, namespace=namespace)

    # ---- used by the request handler ---------------------------------------------------------
    def track_connection(self, conn: socket.socket, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def authorized(self, header: str | None) -> bool:
        # Optional bearer-token check (401 otherwise); without a configured token every request is allowed.
        # https://kubernetes.io/docs/reference/access-authn-authz/authentication/#putting-a-bearer-token-in-a-request
        return self.token is None or header == f"Bearer {self.token}"

    def begin_request(self, method: str, path: str) -> RequestRecord:
        rec = RequestRecord(method, path)
        with self._lock:
            self._records.append(rec)
        return rec

    def before_serving(self, rec: RequestRecord) -> None:
        """Run the before_next hooks matching `rec`, then play a storage outage if one is on."""
        with self._lock:
            due = []
            for hook in self._hooks:
                if hook.remaining > 0 and hook.match.matches(rec):
                    hook.remaining -= 1
                    due.append(hook.action)
        for action in due:
            action(rec)
        if self._outage is None or rec.verb == "watch":
            return
        if self._outage == "hang":
            # The storage call blocks until etcd answers again; kube-apiserver's request timeout (60 s by
            # default, --request-timeout) ends it with 504 Timeout if it never does.
            if not self._storage_back.wait(60.0):
                raise StatusError.for_code(504, "Timeout: request did not complete within requested timeout - "
                                             "context deadline exceeded", "Timeout")
            return
        if rec.resource == "pods/binding":
            # BindingREST.Create (pkg/registry/core/pod/storage/storage.go) turns any error that is not an API
            # status, a storage failure included, into a Conflict on pods/binding.
            raise StatusError.conflict("pods/binding", rec.name, ETCD_UNAVAILABLE)
        # Other storage calls pass the etcd client's error on unchanged: a 500 whose reason is empty
        # (responsewriters.ErrorToAPIStatus for an error that is not an API status).
        raise StatusError.internal(ETCD_UNAVAILABLE)

    def maybe_fail(self, rec: RequestRecord) -> None:
        with self._lock:
            for rule in self._rules:
                if rule.remaining > 0 and rule.matches(rec):
                    rule.remaining -= 1
                    break
            else:
                return
        raise self._injected_error(rule, rec)

    def _injected_error(self, rule: FailureRule, rec: RequestRecord) -> StatusError:
        if rule.code == 403 and rule.message is None:
            # The RBAC authorizer's wording (plugin/pkg/auth/authorizer/rbac).
            scope = f'in the namespace "{rec.namespace}"' if rec.namespace else "at the cluster scope"
            cause = f'User "{self.user}" cannot {rec.verb} resource "{rec.resource}" in API group "{rec.group}" {scope}'
            return StatusError.forbidden(rec.resource.split("/")[0], rec.name, cause, rec.group)
        return StatusError.for_code(rule.code, rule.message, rule.reason, rule.retry_after)

    def fixed_response(self, path: str) -> Any:
        """Discovery and version documents clients may ask for."""
        path = path.rstrip("/")
        if path == "/version":
            # version.Info: every field is present in a real answer (the Python client requires them).
            return {"major": "1", "minor": "34", "gitVersion": "v1.34.0-kubelab-test", "gitCommit": "0" * 40,
                    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
                    "compiler": "gc", "platform": "linux/amd64", "emulationMajor": "1", "emulationMinor": "34",
                    "minCompatibilityMajor": "1", "minCompatibilityMinor": "33"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.url[7:]}]}
        if path == "/apis":
            versions: dict[str, list[str]] = {g: ["v1"] for g in sorted({r.group for r in RESOURCES if r.group})}
            for r in custom_resources.served_types(self.store):
                if r.version not in versions.setdefault(r.group, []):
                    versions[r.group].append(r.version)
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                 "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                for g, vs in versions.items()]}
        if path in _GROUP_VERSION_PATHS:
            return self._resource_list(_GROUP_VERSION_PATHS[path])
        custom = [r for r in custom_resources.served_types(self.store) if f"/apis/{r.api_version}" == path]
        if custom:
            return self._resource_list(custom[0].api_version)
        if path in ("/healthz", "/readyz", "/livez"):
            return {"kind": "Status", "apiVersion": "v1", "status": "Success", "message": "ok", "code": 200}
        return None

    def _resource_list(self, group_version: str) -> Obj:
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        resources = []
        for r in [*RESOURCES, *custom_resources.served_types(self.store)]:
            if r.api_version != group_version:
                continue
            resources.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                              "kind": r.kind, "verbs": verbs, "shortNames": list(r.short_names)})
            for sub in sorted(r.subresources):
                resources.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                                  "kind": "Binding" if sub == "binding" else r.kind,
                                  "verbs": ["create"] if sub == "binding" else ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": resources}

    def watch_opened(self) -> None:
        with self._lock:
            self._open_watches += 1

    def watch_closed(self) -> None:
        with self._lock:
            self._open_watches -= 1

    # ---- hooks: failures and counters --------------------------------------------------------
    def fail_next(self, count: int, code: int, *, path: str | None = None, method: str | None = None,
                  verb: str | None = None, resource: str | None = None, message: str | None = None,
                  reason: str | None = None, retry_after: int | None = None) -> None:
        """Answer the next `count` matching requests with `code` and a Status body.

        Matching: `path` is a regex searched in the URL path; `verb` an API verb (get, list, watch,
        create, update, patch, delete); `resource` like "pods" (also matches its subresources) or
        "pods/binding". 403 gets the RBAC authorizer's message unless `message` is given.
        """
        rule = FailureRule(count, code, re.compile(path) if path else None, method, verb, resource,
                           message, reason, retry_after)
        with self._lock:
            self._rules.append(rule)

    def clear_failures(self) -> None:
        with self._lock:
            self._rules.clear()
            self._hooks.clear()

    def before_next(self, count: int, action: Callable[[RequestRecord], None], *, path: str | None = None,
                    method: str | None = None, verb: str | None = None, resource: str | None = None) -> None:
        """Run ``action(record)`` in the request's thread just before each of the next `count` matching
        requests is served (matching as fail_next). It forces an ordering a race would otherwise reach only
        by chance: e.g. delete a pod and create its same-name successor before the write about the old pod
        lands, or block (wait for something) to hold the request back."""
        rule = FailureRule(count, 0, re.compile(path) if path else None, method, verb, resource, None, None, None)
        with self._lock:
            self._hooks.append(RequestHook(count, action, rule))

    def storage_outage(self, mode: str = "unavailable") -> None:
        """etcd unreachable behind a running API server, until storage_restored(). Watches already open stay
        open and quiet (the watch cache serves them); every other request touches storage. Answers are Status
        bodies (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/) as
        kube-apiserver 1.36 sends them then:
        - "unavailable": answered at once with the etcd client's error (grpc code Unavailable): 409 Conflict
          on pods/binding (the binding registry reports every storage error so), 500 on anything else;
        - "hang": held until storage is back, then served (504 Timeout after 60 s, the default
          --request-timeout), as when etcd restarts and its client waits for it."""
        if mode not in ("unavailable", "hang"):
            raise ValueError(f"unknown storage outage mode {mode!r}")
        with self._lock:
            self._outage = mode
            self._storage_back.clear()

    def storage_restored(self) -> None:
        with self._lock:
            self._outage = None
            self._storage_back.set()

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def request_count(self, verb: str | None = None, resource: str | None = None, *,
                      namespace: str | None = None, code: int | None = None, method: str | None = None,
                      path: str | None = None) -> int:
        """Requests seen so far matching every given filter (`path` is a regex searched in the URL path)."""
        path_re = re.compile(path) if path else None
        return sum(1 for r in self.requests
                   if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
                   and (namespace is None or r.namespace == namespace) and (code is None or r.code == code)
                   and (method is None or r.method == method) and (path_re is None or path_re.search(r.path)))

    def reset_requests(self) -> None:
        with self._lock:
            self._records.clear()

    @property
    def open_watches(self) -> int:
        with self._lock:
            return self._open_watches

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02) -> Any:
        """Poll `predicate` until it returns something truthy; raise TimeoutError naming it otherwise.

        The timeout only bounds a hang: a passing test returns as soon as the predicate holds, and 10 s was
        seen to be too short on a loaded 2-core machine."""
        end = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= end:
                raise TimeoutError(f"condition {getattr(predicate, '__name__', predicate)!r} not met "
                                   f"within {timeout}s")
            time.sleep(interval)

    # ---- hooks: history and watches ----------------------------------------------------------
    def compact_history(self, upto_rv: int | None = None) -> int:
        """Forget change history (all of it by default); later watches from older revisions get 410."""
        return self.store.compact(upto_rv)

    def drop_watches(self, graceful: bool = False) -> None:
        """End every open watch: graceful ends the chunked response, otherwise the socket is cut."""
        self.drop_graceful = graceful
        self.store.drop_watches()

    @property
    def resource_version(self) -> int:
        return self.store.resource_version

    # ---- hooks: objects ----------------------------------------------------------------------
    def add_namespace(self, name: str) -> Obj:
        return self.create_object("namespaces", {"metadata": {"name": name}})

    def _ensure_namespace(self, name: str) -> None:
        if self.store.get("namespaces", "", name) is None:
            try:
                self.add_namespace(name)
            except StatusError:
                pass

    def create_object(self, storage: str, obj: Obj, *, validate: bool = True) -> Obj:
        """Store an object directly (no HTTP). validate=False skips defaulting and validation, e.g.
        for a malformed pod the real API would refuse but a scheduler must survive."""
        rtype = self._storage_type(storage)
        namespace = (obj.get("metadata") or {}).get("namespace", "default") if rtype.namespaced else ""
        if rtype.namespaced:
            self._ensure_namespace(namespace)
        if validate:
            obj = strategies.encode_zero_fields(rtype, strategies.prepare_create(rtype, obj, namespace))
            if storage == "pods":
                obj = strategies.admit_default_tolerations(strategies.admit_priority(self.store, obj))
            elif rtype.custom:
                obj = custom_resources.admit(rtype, obj)
            elif storage == custom_resources.CRD_STORAGE:
                return custom_resources.create_crd(self.store, obj)
        else:
            obj = {"apiVersion": rtype.api_version, "kind": rtype.kind, **obj}
            if rtype.namespaced:
                obj["metadata"] = {**obj["metadata"], "namespace": namespace}
        return self.store.create(storage, obj)

    def _storage_type(self, storage: str) -> ResourceType:
        """A built-in storage key, or a custom resource's "<plural>.<group>" (its CRD's name)."""
        custom = custom_resources.storage_version_type(self.store, storage)
        return custom if custom is not None else storage_type(storage)

    def update_object(self, storage: str, name: str, change: Obj | Callable[[Obj], Obj],
                      namespace: str = "") -> Obj:
        """Change an object directly: `change` is a strategic-merge patch dict or a function returning
        the new object (which must not mutate its argument). Status and spec may both change."""
        def mutate(old: Obj) -> Obj:
            return change(old) if callable(change) else strategic_merge_patch(old, change)
        return self.store.update(storage, namespace, name, mutate)

    def delete_object(self, storage: str, name: str, namespace: str = "") -> Obj:
        if storage == custom_resources.CRD_STORAGE:
            return custom_resources.delete_crd(self.store, name)
        return self.store.delete(storage, namespace, name)

    def get_object(self, storage: str, name: str, namespace: str = "") -> Obj | None:
        return self.store.get(storage, namespace, name)

    def list_objects(self, storage: str, namespace: str | None = None) -> list[Obj]:
        return self.store.list(storage, namespace)[0]

    def add_node(self, node: str | Obj, **kwargs: Any) -> Obj:
        """add_node("n1", cpu="4", memory="8Gi", labels={...}, taints=[...], ready=True) or a full dict."""
        obj = make_node(node, **kwargs) if isinstance(node, str) else node
        return self.create_object("nodes", obj)

    def add_nodes(self, count: int, prefix: str = "node-", **kwargs: Any) -> list[Obj]:
        return [self.add_node(f"{prefix}{i}", **kwargs) for i in range(count)]

    def update_node(self, name: str, change: Obj | Callable[[Obj], Obj]) -> Obj:
        return self.update_object("nodes", name, change)

    def remove_node(self, name: str) -> Obj:
        return self.delete_object("nodes", name)

    def set_node_ready(self, name: str, ready: bool, *, taint: bool = True) -> Obj:
        """Flip the node's Ready condition. With taint=True the node.kubernetes.io/not-ready:NoSchedule
        taint is added/removed too, as the node lifecycle controller does (TaintNodesByCondition,
        https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-nodes-by-condition)."""
        def mutate(old: Obj) -> Obj:
            status = dict(old.get("status") or {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
            status["conditions"] = [*conds, node_ready_condition(ready)]
            spec = dict(old.get("spec") or {})
            if taint:
                taints = [t for t in spec.get("taints") or [] if t.get("key") != NOT_READY_TAINT["key"]]
                if not ready:
                    taints.append(dict(NOT_READY_TAINT))
                if taints:
                    spec["taints"] = taints
                else:
                    spec.pop("taints", None)
            return {**old, "spec": spec, "status": status}
        return self.update_object("nodes", name, mutate)

    def add_pod(self, pod: str | Obj, namespace: str = "default", *, validate: bool = True, **kwargs: Any) -> Obj:
        """add_pod("p1", cpu="100m", scheduler_name="my-scheduler") or a full dict."""
        obj = make_pod(pod, namespace, **kwargs) if isinstance(pod, str) else pod
        return self.create_object("pods", obj, validate=validate)

    def add_pods(self, count: int, namespace: str = "default", prefix: str = "pod-", **kwargs: Any) -> list[Obj]:
        return [self.add_pod(f"{prefix}{i}", namespace, **kwargs) for i in range(count)]

    def update_pod(self, name: str, change: Obj | Callable[[Obj], Obj], namespace: str = "default") -> Obj:
        return self.update_object("pods", name, change, namespace)

    def remove_pod(self, name: str, namespace: str = "default") -> Obj:
        return self.delete_object("pods", name, namespace)

    def finish_pod_deletion(self, name: str, namespace: str = "default") -> Obj:
        """Kubelet stand-in: remove a pod that a graceful DELETE left terminating."""
        return self.delete_object("pods", name, namespace)

    def write_pod_log(self, name: str, text: str, namespace: str = "default", *, container: str,
                      previous: bool = False, at: float | None = None) -> None:
        """Kubelet stand-in: `text`'s lines appear in that container's log (its previous instance's with
        `previous`), stamped `at` (default: now) for sinceSeconds. See kubeapi_testserver/pod_logs.py."""
        self.pod_logs.write((namespace, name, container, previous), text, at)

    def end_pod_log(self, name: str, namespace: str = "default", *, container: str) -> None:
        """The container exited: a follow of its log ends once it has sent every line."""
        self.pod_logs.end((namespace, name, container, False))

    def terminating_pods(self, namespace: str | None = None) -> list[Obj]:
        return [p for p in self.pods(namespace) if p["metadata"].get("deletionTimestamp")]

    def pods(self, namespace: str | None = None) -> list[Obj]:
        return self.list_objects("pods", namespace)

    def nodes(self) -> list[Obj]:
        return self.list_objects("nodes")

    def events(self, namespace: str | None = None) -> list[Obj]:
        """Stored events in core/v1 form (events.k8s.io/v1 posts included)."""
        return self.list_objects("events", namespace)

    def bound_pods(self, namespace: str | None = None) -> dict[str, str]:
        """{namespace/name: nodeName} for every pod with spec.nodeName."""
        return {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}': p["spec"]["nodeName"]
                for p in self.pods(namespace) if (p.get("spec") or {}).get("nodeName")}



