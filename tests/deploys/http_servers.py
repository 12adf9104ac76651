"""Small HTTP servers the system suite runs on the lab bridge's host address.

- `serve_directory`: static files (the stand-in apt repository, the stand-in Calico operator manifest).
- `serve_apt_relay`: a forward proxy that only relays GETs to the Debian mirrors the host's own apt uses.
  The lab machines have no route out; with `Acquire::http::Proxy` pointing here their apt installs the
  real Debian packages (containerd, curl), verified against Debian's archive keys as usual.
"""

from __future__ import annotations

import http.client
import re
import shutil
import threading
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

_FORWARDED_REQUEST_HEADERS = ("Range", "If-Modified-Since", "If-Range", "If-None-Match", "Cache-Control")
_FORWARDED_RESPONSE_HEADERS = ("Content-Type", "Content-Length", "Last-Modified", "ETag", "Content-Range",
                               "Accept-Ranges", "Date")


@dataclass
class RunningServer:
    server: ThreadingHTTPServer
    thread: threading.Thread
    requests: list[str]  # what a relay forwarded (a directory server records nothing)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _start(server: ThreadingHTTPServer, requests: list[str] | None = None) -> RunningServer:
    thread = threading.Thread(target=server.serve_forever, name=f"http-{server.server_address}", daemon=True)
    thread.start()
    return RunningServer(server, thread, [] if requests is None else requests)


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        pass  # one stderr line per request would drown the test output


def serve_directory(root: Path, address: str, port: int = 0) -> RunningServer:
    return _start(ThreadingHTTPServer((address, port), partial(_QuietFiles, directory=str(root))))


def host_apt_mirrors(sources_dir: Path = Path("/etc/apt")) -> set[str]:
    """Host names of the mirrors in the host's apt sources (deb822 and one-line formats)."""
    hosts = {"deb.debian.org"}
    texts = [p.read_text() for p in sources_dir.glob("sources.list.d/*.sources")]
    texts += [p.read_text() for p in [sources_dir / "sources.list", *sources_dir.glob("sources.list.d/*.list")]
              if p.exists()]
    for text in texts:
        active = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        for url in re.findall(r"https?://[^\s/]+", active):
            hosts.add(urlsplit(url).hostname or "")
    return hosts - {""}


def serve_apt_relay(address: str, port: int = 0, allowed_hosts: set[str] | None = None) -> RunningServer:
    allowed = allowed_hosts or host_apt_mirrors()
    requests: list[str] = []

    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.scheme != "http" or url.hostname not in allowed:
                self.send_error(403, f"kubelab apt relay only reaches {', '.join(sorted(allowed))}")
                return
            requests.append(self.path)
            conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=120)
            try:
                headers = {h: self.headers[h] for h in _FORWARDED_REQUEST_HEADERS if self.headers[h]}
                conn.request("GET", url.path + (f"?{url.query}" if url.query else ""), headers=headers)
                upstream = conn.getresponse()
                body_length = upstream.getheader("Content-Length")
                body = None if body_length else upstream.read()  # chunked upstream: buffer it
                self.send_response(upstream.status, upstream.reason)
                for name in _FORWARDED_RESPONSE_HEADERS:
                    if name != "Content-Length" and upstream.getheader(name):
                        self.send_header(name, upstream.getheader(name))
                self.send_header("Content-Length", body_length or str(len(body or b"")))
                self.end_headers()
                if body is None:
                    shutil.copyfileobj(upstream, self.wfile)
                else:
                    self.wfile.write(body)
            finally:
                conn.close()

    return _start(ThreadingHTTPServer((address, port), Relay), requests)
