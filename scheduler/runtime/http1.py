"""A small keep-alive HTTP/1.1 connection pool for the scheduler's whole (not streamed) API requests.

Every bound pod costs two POSTs (its binding and its Scheduled event). Through urllib3 and http.client each
one spent most of its CPU in their layers (retry objects, URL parsing, header dicts, and http.client parsing
the answer's headers with the email package): about 0.25 ms per request on a 2-core machine, a third of the
scheduler's CPU per bound pod. This pool speaks only what the API server's answers need: a status line,
headers read for Content-Length, Transfer-Encoding and Connection, and a body that is whole (Content-Length)
or chunked (kube-apiserver chunks answers over 2 KB, as Go's net/http does). Watches (streamed) stay on
urllib3.

Connections are TCP (or TLS through the caller's ssl.SSLContext) with TCP_NODELAY and the caller's socket
options, kept idle in a LIFO list; an idle connection the server has closed (readable at EOF) is discarded
before reuse, as urllib3 does. Nothing is retried once a request was written (a POST is not idempotent):
failures raise ConnectionError subclasses (OSError) for the caller to turn into its own error.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from collections.abc import Iterable
from typing import BinaryIO

_MAX_LINE = 65536
_MAX_HEADERS = 100


class ProtocolError(ConnectionError):
    """The server's answer was not HTTP/1.1 as expected (or the connection ended inside it)."""


class _Connection:
    __slots__ = ("reader", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb", buffering=65536)

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.sock.close()

    def dropped(self) -> bool:
        """An idle keep-alive connection that is readable has been closed by the server (or sent garbage)."""
        try:
            return bool(select.select([self.sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True


class Pool:
    """Keep-alive connections to one host:port; thread-safe; at most `maxsize` kept idle."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, socket_options: Iterable[tuple[int, int, int]] = (),
                 maxsize: int = 32, host_header: str | None = None) -> None:
        self.host, self.port = host, port
        self.host_header = (host_header or host).encode()
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname or host
        self.socket_options = list(socket_options)
        self.maxsize = maxsize
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _connect(self, timeout: float) -> _Connection:
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for level, name, value in self.socket_options:
                sock.setsockopt(level, name, value)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.server_hostname)
        except BaseException:
            sock.close()
            raise
        return _Connection(sock)

    def _get(self, connect_timeout: float) -> _Connection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(connect_timeout)
            if not conn.dropped():
                return conn
            conn.close()

    def _put(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def request(self, method: str, target: str, headers: bytes, body: bytes | None, *,
                connect_timeout: float, read_timeout: float) -> tuple[int, bytes]:
        """Send one request (`headers`: the header lines, each ending in CRLF, without Host and
        Content-Length) and read the whole answer: (status, body)."""
        conn = self._get(connect_timeout)
        try:
            conn.sock.settimeout(read_timeout)
            head = b"%s %s HTTP/1.1\r\nHost: %s\r\n%s" % (method.encode(), target.encode(),
                                                       self.host_header, headers)
            if body is not None:
                conn.sock.sendall(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
            else:
                conn.sock.sendall(head + b"\r\n")
            status, data, keep = _read_response(conn.reader, method)
        except BaseException:
            conn.close()
            raise
        if keep:
            self._put(conn)
        else:
            conn.close()
        return status, data


def _read_response(reader: BinaryIO, method: str) -> tuple[int, bytes, bool]:
    line = reader.readline(_MAX_LINE)
    if not line:
        raise ProtocolError("the server closed the connection without answering")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x status line: {line[:80]!r}")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    keep = parts[0] == b"HTTP/1.1"
    for _ in range(_MAX_HEADERS):
        line = reader.readline(_MAX_LINE)
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise ProtocolError("the connection ended inside the answer's headers")
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            value = value.strip().lower()
            keep = value != b"close" and (keep or value == b"keep-alive")
    else:
        raise ProtocolError("too many header lines in the answer")
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return status, b"", keep
    if chunked:
        return status, _read_chunked(reader), keep
    if length is not None:
        data = reader.read(length)
        if len(data) != length:
            raise ProtocolError(f"the connection ended after {len(data)} of {length} body bytes")
        return status, data, keep
    return status, reader.read(), False  # delimited by the end of the connection


def _read_chunked(reader: BinaryIO) -> bytes:
    parts = []
    while True:
        line = reader.readline(_MAX_LINE)
        if not line:
            raise ProtocolError("the connection ended inside a chunked answer")
        size = int(line.split(b";", 1)[0], 16)
        if size == 0:
            while (trailer := reader.readline(_MAX_LINE)) not in (b"\r\n", b"\n"):
                if not trailer:
                    raise ProtocolError("the connection ended inside a chunked answer's trailer")
            return b"".join(parts)
        data = reader.read(size + 2)
        if len(data) != size + 2:
            raise ProtocolError("the connection ended inside a chunk")
        parts.append(data[:size])
