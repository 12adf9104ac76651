"""The system suite's servers, on 127.0.0.1: the apt relay forwards only to allowed mirrors and passes
upstream answers through."""

from __future__ import annotations

import http.client

from tests.deploys.http_servers import host_apt_mirrors, serve_apt_relay, serve_directory


def proxied_get(port: int, url: str, headers: dict | None = None) -> tuple[int, bytes, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", url, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        conn.close()


def test_relay_forwards_to_allowed_mirrors_only(tmp_path):
    (tmp_path / "dists").mkdir()
    (tmp_path / "dists" / "InRelease").write_bytes(b"0123456789" * 100)
    mirror = serve_directory(tmp_path, "127.0.0.1")
    relay = serve_apt_relay("127.0.0.1", allowed_hosts={"127.0.0.1"})
    try:
        url = f"http://127.0.0.1:{mirror.port}/dists/InRelease"
        status, body, headers = proxied_get(relay.port, url)
        assert (status, len(body), headers["Content-Length"]) == (200, 1000, "1000")
        status, _, _ = proxied_get(relay.port, f"http://127.0.0.1:{mirror.port}/dists/Missing")
        assert status == 404  # upstream statuses pass through
        status, _, _ = proxied_get(relay.port, f"http://localhost:{mirror.port}/dists/InRelease")
        assert status == 403
        assert relay.requests == [url, f"http://127.0.0.1:{mirror.port}/dists/Missing"]
    finally:
        relay.stop()
        mirror.stop()


def test_host_mirrors_come_from_active_source_lines(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# http://snapshot.debian.org/archive/debian/2025\nURIs: http://mirror.example.org/debian\n")
    (tmp_path / "sources.list").write_text("deb http://ftp.example.net/debian bookworm main\n")
    assert host_apt_mirrors(tmp_path) == {"deb.debian.org", "mirror.example.org", "ftp.example.net"}
