"""A fault-injecting TCP proxy on 127.0.0.1, in front of the Kubernetes API test server.

It stands in for the network path between the scheduler and its API server, and models:
- partition(): every connection open now, and every one opened until heal(), goes silent. Bytes in
  either direction are dropped and nothing is closed towards the client (no FIN, no RST), as when a route
  is dropped or a NAT/conntrack entry or a load balancer's state is lost. The server's end of each such
  connection is closed (the server gives up on a peer it cannot reach).
- heal(): connections opened from now on work again. Connections that went silent stay silent until the
  client closes them: the path's state for them is gone, so a real client hears nothing more on them
  either (the issue's measured failure: watches and pooled keep-alive connections dead after the heal).
- the API server down (stopped): a new connection is closed at once, as a proxy answers when its
  upstream refuses connections.

It does not model TCP itself: this host's kernel answers the client's keepalive probes, so TCP keepalive
cannot notice a partition here, only the scheduler's own silence bounds can. No latency, no partial loss.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class _Link:
    """One client connection and, unless it went silent before it was connected, its upstream."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.silent = False

    def go_silent(self) -> None:
        self.silent = True
        if self.upstream is not None:
            _close(self.upstream)

    def close(self) -> None:
        _close(self.client)
        if self.upstream is not None:
            _close(self.upstream)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class FaultProxy:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.upstream_port = upstream_port
        self._listener = socket.create_server((host, 0))
        self.port = self._listener.getsockname()[1]
        self._links: set[_Link] = set()
        self._partitioned = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        _close(self._listener)
        with self._lock:
            links, self._links = list(self._links), set()
        for link in links:
            link.close()
        self._thread.join(5)

    def partition(self) -> None:
        with self._lock:
            self._partitioned = True
            links = list(self._links)
        for link in links:
            link.go_silent()

    def heal(self) -> None:
        with self._lock:
            self._partitioned = False

    # -- plumbing --------------------------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # stopped
            threading.Thread(target=self._open, args=(conn,), daemon=True).start()

    def _open(self, conn: socket.socket) -> None:
        link = _Link(conn)
        with self._lock:
            self._links.add(link)
            link.silent = self._partitioned
        if not link.silent:
            try:
                upstream = socket.create_connection((self.host, self.upstream_port), timeout=5)
            except OSError:
                self._drop(link)  # the API server is down
                return
            upstream.settimeout(None)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link.upstream = upstream
            if link.silent:  # partitioned while connecting
                _close(upstream)
            else:
                threading.Thread(target=self._pump, args=(link, upstream, conn), daemon=True).start()
        self._pump(link, conn, None)

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket | None) -> None:
        """Copy src to dst (dst None: towards the upstream) until either end closes; once the link is
        silent, what the client sends is dropped and the upstream's direction just stops."""
        towards_upstream = src is link.client
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if link.silent and towards_upstream:
                if not data:
                    self._drop(link)  # the client closed it
                    return
                continue
            if link.silent or not data:
                if not link.silent:
                    self._drop(link)
                return
            target = link.upstream if towards_upstream else dst
            try:
                assert target is not None
                target.sendall(data)
            except OSError:
                if not link.silent:
                    self._drop(link)
                return

    def _drop(self, link: _Link) -> None:
        with self._lock:
            self._links.discard(link)
        link.close()
