"""A thin raw-JSON layer over the official client's connection machinery.

The `kubernetes` package does what we should not rewrite: kubeconfig and in-cluster loading, client
certificates, bearer tokens (with exec/OIDC refresh hooks) and a urllib3 connection pool. What it does
slowly for a scheduler is everything after the socket: generated models, deep deserialisation and
`sanitize_for_serialization` on every body. So this module borrows the pool and the auth headers and
speaks JSON dicts (camelCase, exactly as the API sends them), parsed once.

Every request passes a token bucket (clientConnection.qps / burst, like client-go's flowcontrol), so
users can compare against kube-scheduler's defaults (qps 50, burst 100). qps <= 0 means unlimited.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from urllib3.connection import HTTPConnection

from scheduler.runtime import http1

log = logging.getLogger(__name__)

USER_AGENT = "kubelab-scheduler"

# One immediate retry when a pooled keep-alive connection turns out to be closed (connect errors; read
# errors only for idempotent verbs, urllib3's default). Anything else is the caller's to retry with backoff.
# client-go's rest.Request: an answer with Retry-After is tried again at most this many times.
MAX_RETRY_AFTER = 10
_RETRIES = urllib3.Retry(total=2, connect=2, read=1, redirect=0, status=0, other=0, raise_on_status=False)

# TCP keepalive on every socket: when the API server's host vanishes (crash, dropped route) the kernel
# probes an idle connection after 15 s and gives up after 3 unanswered probes 5 s apart, so a dead peer
# fails reads within ~30 s instead of never. It cannot see a silent middlebox that still answers TCP
# (a proxy or load balancer that lost its upstream): watches bound their own silence for that (informer.py).
_KEEPALIVE = [
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    *[
        (socket.IPPROTO_TCP, getattr(socket, name), value)
        for name, value in (("TCP_KEEPIDLE", 15), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3))
        if hasattr(socket, name)
    ],
]


class RequestCounts:
    """What this process asked of the API server, counted client-side as each request is sent: requests by
    verb and resource in kube-apiserver's terms (``apiserver_request_total``: LIST, WATCH, GET, POST, PUT,
    PATCH, DELETE; resource with its API group and subresource, e.g. ``pods/binding``,
    ``events.events.k8s.io``), and the bytes of watch events decoded per resource. Shared by a client and
    its twins (with_own_limiter); /metrics exports it (scheduler.runtime.metrics)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str], int] = {}
        self.watch_bytes: dict[str, int] = {}
        self.answer_bytes: dict[str, int] = {}

    def request(self, verb: str, path: str, query: Mapping[str, Any] | None) -> tuple[str, str]:
        """Count one request; returns its (verb, resource)."""
        key = request_kind(verb, path, query)
        with self._lock:
            self.requests[key] = self.requests.get(key, 0) + 1
        return key

    def watched(self, resource: str, size: int) -> None:
        with self._lock:
            self.watch_bytes[resource] = self.watch_bytes.get(resource, 0) + size

    def answered(self, resource: str, size: int) -> None:
        """Bytes of a whole (not streamed) answer decoded: lists, binding and event answers."""
        with self._lock:
            self.answer_bytes[resource] = self.answer_bytes.get(resource, 0) + size

    def answer_totals(self) -> dict[str, int]:
        with self._lock:
            return dict(self.answer_bytes)

    def totals(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """Copies of (requests by (verb, resource), watch bytes by resource)."""
        with self._lock:
            return dict(self.requests), dict(self.watch_bytes)


def request_kind(verb: str, path: str, query: Mapping[str, Any] | None) -> tuple[str, str]:
    """(verb, resource) of a request as kube-apiserver names them: a GET is LIST on a collection and WATCH
    with watch=true; the resource is `plural[.group][/subresource]` (a path outside the resource tree, such
    as /version, is its own name)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return verb, "/" + "/".join(parts)
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        rest = rest[2:]  # /namespaces/NS/<resource>...; /namespaces/NAME alone is a namespace
    resource = rest[0] + (f".{group}" if group else "") if rest else ""
    if len(rest) >= 3:
        resource += "/" + rest[2]
    if verb == "GET" and len(rest) == 1:
        verb = "WATCH" if (query or {}).get("watch") in ("true", "1", True) else "LIST"
    return verb, resource


class CredentialsError(Exception):
    """Credentials could not be loaded; the message says which file/option to fix."""


class RequestCancelled(Exception):
    """A request given up before it was sent (its `cancel` event was set while it waited for a token)."""


class ApiError(Exception):
    """A non-2xx answer from the API server, with the fields of its Status body.

    status 0 means the request never got an HTTP answer (connection refused, TLS, timeout).
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        verb: str = "",
        path: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.verb = verb
        self.path = path
        self.details = dict(details or {})
        super().__init__(f"{verb} {path}: {status} {reason}: {message}".strip())

    @property
    def unreachable(self) -> bool:
        return self.status == 0

    @property
    def retry_after(self) -> int | None:
        """The seconds the API server asked the client to wait before trying again: a 429 or 5xx Status's
        details.retryAfterSeconds, which kube-apiserver sends with the same value as its Retry-After header
        (API Priority and Fairness' throttling, a storage timeout). None when it asked for nothing."""
        if self.status != 429 and self.status < 500:
            return None
        seconds = self.details.get("retryAfterSeconds")
        return seconds if isinstance(seconds, int) and seconds > 0 else None


@dataclass
class TokenBucket:
    """client-go style rate limiter: `qps` tokens per second, at most `burst` saved up. Thread-safe."""

    qps: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self._tokens = float(max(self.burst, 1))
        self._stamp = self.clock()
        self._lock = threading.Lock()

    def take(self, cancel: threading.Event | None = None) -> float:
        """Block until a token is available (or `cancel` is set); returns the seconds waited."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self.clock()
            cap = float(max(self.burst, 1))
            self._tokens = min(cap, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        if wait > 0:
            if cancel is None:
                self.sleep(wait)
            else:
                cancel.wait(wait)
        return wait


_UNVERIFIED_SERVERS: set[str] = set()


def unverified_tls_notice(configuration: k8s_client.Configuration, kubeconfig: str) -> str:
    """One sentence instead of urllib3's InsecureRequestWarning on every request.

    A kubeconfig with `insecure-skip-tls-verify` makes urllib3 warn on each request (dozens of lines around
    test-placement's table). This silences that warning for the process and returns our own notice, once per
    server ("" for a verified or plain-HTTP server, or one already noted).
    """
    host = configuration.host
    if configuration.verify_ssl or not host.startswith("https://"):
        return ""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if host in _UNVERIFIED_SERVERS:
        return ""
    _UNVERIFIED_SERVERS.add(host)
    return (f"the kubeconfig {kubeconfig} skips TLS verification for {host}: "
            "the API server's identity is not checked")


def load_configuration(kubeconfig: str | None) -> k8s_client.Configuration:
    """Credentials from `kubeconfig`, else from the pod's service account (in-cluster)."""
    cfg = k8s_client.Configuration()
    if kubeconfig:
        if not os.path.exists(kubeconfig):
            raise CredentialsError(
                f"kubeconfig file {kubeconfig!r} does not exist: fix --kubeconfig or "
                "clientConnection.kubeconfig"
            )
        try:
            k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        except Exception as exc:  # the loader raises several unrelated types
            raise CredentialsError(f"cannot load kubeconfig {kubeconfig!r}: {exc}") from exc
        if notice := unverified_tls_notice(cfg, kubeconfig):
            log.warning(notice)
        return cfg
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise CredentialsError(
            "no kubeconfig given and not running in a cluster (KUBERNETES_SERVICE_HOST unset): "
            "pass --kubeconfig FILE or set clientConnection.kubeconfig in the config"
        )
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except k8s_config.ConfigException as exc:
        raise CredentialsError(f"in-cluster credentials unusable: {exc}") from exc
    return cfg


class Client:
    """JSON requests against one API server, sharing one connection pool between threads."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        pool_size: int = 32,
    ) -> None:
        configuration.connection_pool_maxsize = pool_size
        configuration.socket_options = HTTPConnection.default_socket_options + _KEEPALIVE
        self.configuration = configuration
        self._api = k8s_client.ApiClient(configuration)
        self._pool = self._api.rest_client.pool_manager
        self.host = configuration.host.rstrip("/")
        self._path_prefix = urllib3.util.parse_url(self.host).path or ""  # an API server behind a path
        self._lean = _lean_pool(configuration, self._pool, pool_size)
        self.limiter = TokenBucket(qps, burst)
        self.counts = RequestCounts()

    def close(self) -> None:
        self._api.close()

    def drop_connections(self) -> None:
        """Close every pooled keep-alive connection. Called when a request or a watch found the path to
        the API server dead: the idle connections beside it are most likely dead too, and a binding sent
        on one would wait out its whole timeout after the network heals."""
        self._pool.clear()
        if self._lean is not None:
            self._lean.clear()

    def with_own_limiter(self) -> Client:
        """The same connections and credentials behind a separate token bucket: kube-scheduler writes
        events through a client of its own, so events never eat the bindings' QPS budget."""
        twin = object.__new__(Client)
        twin.__dict__.update(self.__dict__)
        twin.limiter = TokenBucket(self.limiter.qps, self.limiter.burst)
        return twin

    # -- low level -------------------------------------------------------------------------------
    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        # Applies the bearer token, calling the loader's refresh hook for expiring credentials.
        self._api.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    def _url(self, path: str, query: Mapping[str, Any] | None) -> str:
        return self.host + _target(path, query)

    def request(
        self,
        verb: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
        cancel: threading.Event | None = None,
        read_answer: bool = True,
    ) -> dict[str, Any]:
        """One request with a JSON (or bytes) body; returns the parsed JSON answer or raises ApiError.
        Raises RequestCancelled, without sending, if `cancel` is set before the request goes out.
        `read_answer` False: a success's body is not decoded ({} is returned), for writes whose answer
        nobody reads (an event: its answer is the whole Event again, ~1 KB with managedFields).

        An answer asking to wait (429 or 5xx with Retry-After) is tried again after that wait, as client-go's
        rest.Request does (up to MAX_RETRY_AFTER times, each through the rate limiter again), as long as the
        waits fit in `timeout`; a `cancel` set meanwhile ends the wait with RequestCancelled."""
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        waited = 0.0
        for attempt in range(MAX_RETRY_AFTER + 1):
            try:
                raw, resource = self._attempt(verb, path, query, data, content_type, timeout, cancel)
                break
            except ApiError as err:
                wait = err.retry_after
                if wait is None or attempt == MAX_RETRY_AFTER or waited + wait > timeout:
                    raise
            waited += wait
            if cancel is None:
                time.sleep(wait)
            elif cancel.wait(wait):
                raise RequestCancelled(f"{verb} {path}")
        if not raw or not read_answer:
            return {}
        self.counts.answered(resource, len(raw))
        return orjson.loads(raw)

    def _attempt(self, verb: str, path: str, query: Mapping[str, Any] | None, data: bytes | None,
                 content_type: str, timeout: float, cancel: threading.Event | None) -> tuple[bytes, str]:
        """One try of ``request``: the answer's body and the resource it counts under."""
        if self._lean is not None:
            return self._send_lean(verb, path, query, data, content_type, timeout, cancel)
        tmo = urllib3.Timeout(connect=min(timeout, 10.0), read=timeout)
        raw = self._send(verb, path, query, data, content_type, tmo, stream=False, cancel=cancel).data
        return raw, request_kind(verb, path, query)[1]

    def _send_lean(self, verb: str, path: str, query: Mapping[str, Any] | None, data: bytes | None,
                   content_type: str, timeout: float, cancel: threading.Event | None) -> tuple[bytes, str]:
        """_send for a whole answer through the keep-alive pool of scheduler.runtime.http1 (its docstring says
        why); the same rate limit, counting, errors and dropped-pool rule."""
        self.limiter.take(cancel)
        if cancel is not None and cancel.is_set():
            raise RequestCancelled(f"{verb} {path}")
        resource = self.counts.request(verb, path, query)[1]
        headers = "".join(f"{k}: {v}\r\n" for k, v in
                          self._headers(content_type if data is not None else None).items()).encode()
        assert self._lean is not None
        try:
            status, raw = self._lean.request(verb, self._path_prefix + _target(path, query), headers, data,
                                             connect_timeout=min(timeout, 10.0), read_timeout=timeout)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, TLS, or not HTTP
            self.drop_connections()
            raise ApiError(0, "Unreachable", f"{self.host}: {exc}", verb=verb, path=path) from exc
        if status >= 300:
            raise _error_from(status, raw, verb, path)
        return raw, resource

    def _send(
        self,
        verb: str,
        path: str,
        query: Mapping[str, Any] | None,
        data: bytes | None,
        content_type: str,
        timeout: urllib3.Timeout,
        *,
        stream: bool,
        cancel: threading.Event | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send one request through the rate limiter; returns the raw response (2xx only) or raises
        ApiError. `stream`: leave the body unread (a watch) instead of reading it whole."""
        self.limiter.take(cancel)
        if cancel is not None and cancel.is_set():
            raise RequestCancelled(f"{verb} {path}")
        self.counts.request(verb, path, query)
        headers = self._headers(content_type if data is not None else None)
        try:
            if isinstance(self._pool, urllib3.ProxyManager):  # a proxy wants the absolute URL
                resp = self._pool.request(verb, self._url(path, query), body=data, headers=headers,
                                          preload_content=not stream, timeout=timeout, retries=_RETRIES)
            else:
                # Straight to the host's connection pool: PoolManager.request would parse the whole URL and
                # copy the headers again on every request, ~6% of the scheduler's CPU per bound pod.
                resp = self._pool.connection_from_url(self.host).urlopen(
                    verb, self._path_prefix + _target(path, query), body=data, headers=headers,
                    preload_content=not stream, timeout=timeout, retries=_RETRIES, redirect=False,
                    assert_same_host=False)
        except urllib3.exceptions.HTTPError as exc:
            self.drop_connections()
            raise ApiError(0, "Unreachable", f"{self.host}: {exc}", verb=verb, path=path) from exc
        if resp.status >= 300:
            raw = resp.data  # reads a streamed body too
            resp.release_conn()
            raise _error_from(resp.status, raw, verb, path)
        return resp

    # -- conveniences ----------------------------------------------------------------------------
    def get(self, path: str, query: Mapping[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.request("GET", path, query=query, timeout=timeout)

    def post(self, path: str, body: Any, timeout: float = 30.0, *, read_answer: bool = True) -> dict[str, Any]:
        return self.request("POST", path, body=body, timeout=timeout, read_answer=read_answer)

    def put(self, path: str, body: Any, timeout: float = 30.0) -> dict[str, Any]:
        return self.request("PUT", path, body=body, timeout=timeout)

    def patch(
        self,
        path: str,
        body: Any,
        content_type: str = "application/strategic-merge-patch+json",
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        return self.request("PATCH", path, body=body, content_type=content_type, timeout=timeout)

    def watch_lines(
        self,
        path: str,
        query: Mapping[str, Any],
        read_timeout: float,
        on_open: Callable[[urllib3.BaseHTTPResponse | None], None] = lambda r: None,
    ) -> Iterator[dict[str, Any]]:
        """Stream a watch: one parsed event dict per line. Ends when the server closes the stream.
        `read_timeout` bounds the silence between two reads: a stream that hears nothing for that long
        raises ApiError reason "WatchSilent" (and the pool is dropped, as for any dead connection).
        `on_open` receives the response (and None at the end) so another thread can shut it down."""
        tmo = urllib3.Timeout(connect=10.0, read=read_timeout)
        resp = self._send("GET", path, query, None, "", tmo, stream=True)
        on_open(resp)
        resource = request_kind("GET", path, None)[1]
        try:
            buf = b""
            for chunk in _chunks(resp):
                buf += chunk
                if b"\n" not in buf:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.counts.watched(resource, len(line))
                        yield orjson.loads(line)
            if buf.strip():
                self.counts.watched(resource, len(buf))
                yield orjson.loads(buf)
        except urllib3.exceptions.ReadTimeoutError as exc:
            self.drop_connections()
            raise ApiError(0, "WatchSilent", f"nothing received for {read_timeout:.0f}s", verb="WATCH",
                           path=path) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self.drop_connections()
            raise ApiError(0, "WatchBroken", str(exc), verb="WATCH", path=path) from exc
        finally:
            on_open(None)
            resp.release_conn()

    def text_lines(self, path: str, query: Mapping[str, Any], read_timeout: float | None) -> Iterator[str]:
        """A plain-text answer (pods/log), one line at a time as it arrives, until the server ends it.
        `read_timeout` None waits for the next byte as long as it takes (a followed, quiet log)."""
        tmo = urllib3.Timeout(connect=10.0, read=read_timeout)
        resp = self._send("GET", path, query, None, "", tmo, stream=True)
        try:
            buf = b""
            for chunk in _chunks(resp):
                *lines, buf = (buf + chunk).split(b"\n")
                yield from (line.decode(errors="replace") for line in lines)
            if buf:
                yield buf.decode(errors="replace")
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(0, "StreamBroken", str(exc), verb="GET", path=path) from exc
        finally:
            resp.release_conn()


def _lean_pool(configuration: k8s_client.Configuration, pool: Any, size: int) -> http1.Pool | None:
    """The keep-alive pool for whole answers, with the TLS settings the official client would use; None (all
    requests through urllib3) behind a proxy or with a hostname assertion this pool does not implement."""
    if isinstance(pool, urllib3.ProxyManager) or configuration.assert_hostname is not None:
        return None
    url = urllib3.util.parse_url(configuration.host)
    if url.scheme not in ("http", "https") or not url.host:
        return None
    context = None
    if url.scheme == "https":
        if configuration.verify_ssl:
            context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
    host = url.host.strip("[]")
    port = url.port or (443 if url.scheme == "https" else 80)
    return http1.Pool(host, port, ssl_context=context,
                      server_hostname=configuration.tls_server_name or host,
                      socket_options=configuration.socket_options or (), maxsize=size, host_header=url.netloc)


def _target(path: str, query: Mapping[str, Any] | None) -> str:
    """The request target: the path and the query string (None values left out)."""
    if not query:
        return path
    return path + "?" + urlencode({k: v for k, v in query.items() if v is not None})


def _chunks(resp: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """Bytes as they arrive: chunked encoding (what the API uses) or a plain close-delimited body."""
    if resp.chunked:
        yield from resp.stream(65536, decode_content=True)
        return
    while True:
        data = resp.read1(65536)
        if not data:
            return
        yield data


def _error_from(status: int, raw: bytes, verb: str, path: str) -> ApiError:
    """Build ApiError from a metav1.Status body when there is one (the API always sends one)."""
    try:
        obj = json.loads(raw) if raw else {}
    except ValueError:
        obj = {}
    if isinstance(obj, dict) and obj.get("kind") == "Status":
        return ApiError(
            status,
            obj.get("reason", ""),
            obj.get("message", ""),
            verb=verb,
            path=path,
            details=obj.get("details"),
        )
    text = raw[:300].decode("utf-8", "replace") if raw else ""
    return ApiError(status, "", text, verb=verb, path=path)


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    """A pod's API path (a subresource's with `sub`); without a name, the namespace's pod collection."""
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods"
    if not name:
        return path
    path = f"{path}/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def describe_forbidden(err: ApiError, verb: str, resource: str) -> str:
    """A log line naming the RBAC permission the scheduler lacks."""
    return (
        f"permission denied: the scheduler's account needs '{verb}' on '{resource}' "
        f"(add it to its ClusterRole): {err.message}"
    )
