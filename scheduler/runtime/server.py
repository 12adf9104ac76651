"""/healthz, /readyz and /metrics over HTTP (kube-scheduler serves the same paths on its secure port).

/healthz: the process is alive and its scheduling loop has not died.
/readyz:  caches synced, and either leading or standing by for the lease (a standby is ready: it is
          doing its job, which is to wait).
POST:     only when ``post`` is given (the extender's verbs): ``post(path, body)`` answers (status, JSON bytes).

A small HTTP/1.1 server, one thread per connection, kept alive (every answer has a Content-Length):
kube-scheduler's HTTP client reuses one connection per request stream instead of a TCP handshake per extender
call. It replaces http.server, whose per-request work (header parsing through the email package, a Date header,
several writes) cost the extender about as much CPU as its own filter answer at 500 nodes. It reads what the
verbs and probes need: the request line, Content-Length, Connection and Expect; a POST without Content-Length
(chunked) gets 411 and the connection closes, as before. Each answer goes out in one write with TCP_NODELAY:
headers and body written apart would let Nagle's algorithm hold the body for the client's delayed ACK.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import BinaryIO

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

PostHandler = Callable[[str, bytes], tuple[int, bytes]]

_MAX_LINE = 65536
_MAX_HEADERS = 100
_TEXT = "text/plain; charset=utf-8"


class _BadRequest(Exception):
    """The request cannot be read: answer 400 and close the connection."""


class HealthServer:
    def __init__(
        self,
        address: str,
        port: int,
        *,
        registry: CollectorRegistry,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        post: PostHandler | None = None,
    ) -> None:
        self.registry, self.healthy, self.ready, self.post = registry, healthy, ready, post
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._sock = socket.create_server((address, port), family=family)  # OSError when taken: the caller names it
        self._stopping = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="health-server", daemon=True)

    @property
    def port(self) -> int:
        return self._sock.getsockname()[1]

    def start(self) -> None:
        self._thread.start()
        log.info("serving /healthz /readyz /metrics on %s:%d", *self._sock.getsockname()[:2])

    def stop(self) -> None:
        self._stopping.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        except OSError:
            pass
        self._sock.close()
        if self._thread.is_alive():
            self._thread.join(5)
        with self._lock:
            conns, self._open = list(self._open), set()
        for conn in conns:  # ends each connection's thread at its next read
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._stopping.is_set():
                    return
                continue  # e.g. the peer reset the connection before accept() returned it
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="health-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb", buffering=65536)
        try:
            while self._one(reader, conn):
                pass
        except OSError:  # the client went away, or stop()
            pass
        except Exception:  # a bug must cost this connection, not the server
            log.exception("health server: serving a connection failed")
        finally:
            with self._lock:
                self._open.discard(conn)
            reader.close()
            conn.close()

    def _one(self, reader: BinaryIO, conn: socket.socket) -> bool:
        """Read one request and answer it; False when the connection is to close."""
        line = reader.readline(_MAX_LINE + 1)
        if not line:
            return False
        try:
            method, target, version, headers = _read_request(line, reader)
        except _BadRequest as err:
            conn.sendall(_answer(400, f"{err}\n".encode(), _TEXT, close=True))
            return False
        connection = headers.get("connection", "").lower()
        keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        path = target.split("?", 1)[0]
        if method == "GET":
            code, body, ctype = self._get(path)
        elif method == "POST":
            length = headers.get("content-length")
            if self.post is None or length is None or not length.isdigit():
                # The body is not read: the stream cannot be reused.
                code, body = (404, b"not found\n") if self.post is None else \
                    (411, b"a Content-Length header is required\n")
                conn.sendall(_answer(code, body, "text/plain", close=True))
                return False
            if headers.get("expect", "").lower() == "100-continue" and version == "HTTP/1.1":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            data = reader.read(int(length))
            if len(data) < int(length):
                return False  # the client closed mid-body
            code, body = self.post(path, data)
            ctype = "application/json"
        else:
            conn.sendall(_answer(501, f"method {method} is not served here\n".encode(), _TEXT, close=True))
            return False
        conn.sendall(_answer(code, body, ctype, close=not keep))
        log.debug("health server: %s %s %d", method, path, code)
        return keep

    def _get(self, path: str) -> tuple[int, bytes, str]:
        if path == "/metrics":
            return 200, generate_latest(self.registry), CONTENT_TYPE_LATEST
        if path in ("/healthz", "/livez", "/readyz"):
            ok, why = (self.ready if path == "/readyz" else self.healthy)()
            return (200 if ok else 503), (why + "\n").encode(), _TEXT
        return 404, b"not found\n", "text/plain"


def _read_request(line: bytes, reader: BinaryIO) -> tuple[str, str, str, dict[str, str]]:
    """The request line's method, target and version, and the headers (lower-case names; the last of a
    repeated one)."""
    if len(line) > _MAX_LINE:
        raise _BadRequest("request line too long")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"bad request line {line[:100]!r}")
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        raw = reader.readline(_MAX_LINE + 1)
        if raw in (b"\r\n", b"\n"):
            return parts[0], parts[1], parts[2], headers
        if not raw or len(raw) > _MAX_LINE:
            raise _BadRequest("headers cut short or a header line too long")
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise _BadRequest(f"bad header line {raw[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    raise _BadRequest(f"more than {_MAX_HEADERS} headers")


def _answer(code: int, body: bytes, ctype: str, *, close: bool) -> bytes:
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = ""
    head = f"HTTP/1.1 {code} {phrase}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
    return (head + ("Connection: close\r\n\r\n" if close else "\r\n")).encode("latin-1") + body
