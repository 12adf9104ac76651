"""/healthz, /readyz and /metrics over HTTP (kube-scheduler serves the same paths on its secure port).

/healthz: the process is alive and its scheduling loop has not died.
/readyz:  caches synced, and either leading or standing by for the lease (a standby is ready: it is
          doing its job, which is to wait).
POST:     only when ``post`` is given (the extender's verbs): ``post(path, body)`` answers (status, JSON bytes).

Connections are kept alive (HTTP/1.1; every answer has a Content-Length): kube-scheduler's HTTP client
reuses one connection per request stream instead of a TCP handshake per extender call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

PostHandler = Callable[[str, bytes], tuple[int, bytes]]


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
        handler = _make_handler(registry, healthy, ready, post)
        self.httpd = ThreadingHTTPServer((address, port), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="health-server", daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def start(self) -> None:
        self._thread.start()
        log.info("serving /healthz /readyz /metrics on %s:%d", *self.httpd.server_address[:2])

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _make_handler(
    registry: CollectorRegistry,
    healthy: Callable[[], tuple[bool, str]],
    ready: Callable[[], tuple[bool, str]],
    post: PostHandler | None,
) -> type[BaseHTTPRequestHandler]:
    class HealthRequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes: with Nagle's algorithm the body would wait for the
        # client's delayed ACK of the headers (40 ms on Linux) on a kept-alive connection.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/livez"):
                self._probe(healthy)
            elif path == "/readyz":
                self._probe(ready)
            else:
                self._send(404, b"not found\n", "text/plain")

        def do_POST(self) -> None:
            length = self.headers.get("Content-Length")
            if post is None or length is None or not length.isdigit():
                self.close_connection = True  # the body is not read: the stream cannot be reused
                if post is None:
                    self._send(404, b"not found\n", "text/plain")
                else:
                    self._send(411, b"a Content-Length header is required\n", "text/plain")
            else:
                code, body = post(self.path.split("?", 1)[0], self.rfile.read(int(length)))
                self._send(code, body, "application/json")

        def _probe(self, check: Callable[[], tuple[bool, str]]) -> None:
            ok, why = check()
            self._send(200 if ok else 503, (why + "\n").encode(), "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("health server: " + format, *args)

    return HealthRequestHandler
