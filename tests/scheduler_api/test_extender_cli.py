"""`python -m scheduler extender` as a user runs it beside a cluster: a subprocess with a config enabling
NetworkAware, a kubeconfig for the Kubernetes API test server (kubeapi_testserver, a stand-in for kube-apiserver)
and --listen on loopback, answering over HTTP; and the HTTP server it runs, in-process, for how it
answers on a kept-alive connection.

No kube-scheduler binary runs here and nothing pretends to be one: the test POSTs ExtenderArgs as
kube-scheduler's HTTPExtender.send does (pkg/scheduler/extender.go: JSON body, Content-Type
application/json, POST to urlPrefix + "/" + verb, one kept-alive connection), with the pod as the API server
returned it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeapi_testserver.fixtures import free_port
from kubeapi_testserver.objects import make_pod as kube_pod
from scheduler.config import parse_config
from scheduler.extender.service import Extender
from scheduler.framework import build_profiles
from scheduler.runtime.cache import Cache
from scheduler.runtime.metrics import ExtenderMetrics
from scheduler.runtime.server import HealthServer
from tests import bundled_plugins
from tests.scheduler_api.harness import NETWORK_AWARE_CONFIG, SCHEDULER

pytestmark = pytest.mark.api

REPO = Path(__file__).resolve().parents[2]
NETWORK_REASON = ("node(s) didn't have label network-topology=high-speed requested by pod annotation "
                  "my-network-preference")


def _run(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scheduler", "extender", *args, *bundled_plugins.CLI_ARGS],
                            cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))


def _wait_ready(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.1)
    raise AssertionError("the extender never became ready")


def _post(conn: http.client.HTTPConnection, verb: str, body: bytes) -> tuple[int, Any]:
    conn.request("POST", f"/scheduler/{verb}", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


def _by_name(pod: dict[str, Any], names: list[str]) -> bytes:
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()


def test_answers_kube_scheduler_requests_from_the_cluster_and_stops_cleanly(kube_api, kube_api_kubeconfig,
                                                                            tmp_path) -> None:
    kube_api.add_node("fast", labels={"network-topology": "high-speed"})
    kube_api.add_node("slow", cpu="4")
    kube_api.add_pod("busy", cpu="3", node_name="slow")  # bound: the extender must count it on slow
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(NETWORK_AWARE_CONFIG)
    port = free_port()
    proc = _run(["--config", str(config), "--kubeconfig", str(kube_api_kubeconfig), "--listen", f"127.0.0.1:{port}"])
    try:
        _wait_ready(port, proc)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        big = kube_api.add_pod("big", cpu="2", scheduler_name=SCHEDULER)
        code, result = _post(conn, "filter", _by_name(big, ["fast", "slow", "ghost"]))
        assert code == 200
        assert result["NodeNames"] == ["fast"]
        assert result["FailedNodes"] == {"slow": "Insufficient cpu"}
        assert result["FailedAndUnresolvableNodes"] == {"ghost": "node(s) not found in the extender's cache"}

        code, answer = _post(conn, "filter", b'{"Pod": ')  # malformed, on the same kept-alive connection
        assert code == 400 and answer["Error"].startswith("malformed filter request: the body is not JSON")

        fussy = kube_api.add_pod("fussy", scheduler_name=SCHEDULER,
                                 annotations={"my-network-preference": "high-speed"})
        nodes = {"metadata": {}, "items": kube_api.nodes()}
        code, result = _post(conn, "filter", json.dumps({"Pod": fussy, "Nodes": nodes, "NodeNames": None}).encode())
        assert code == 200
        assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["fast"]
        assert result["FailedAndUnresolvableNodes"] == {"slow": NETWORK_REASON}
        code, scores = _post(conn, "prioritize", _by_name(fussy, ["slow", "fast"]))
        assert code == 200
        assert scores[1] == {"Host": "fast", "Score": 10} and scores[0]["Host"] == "slow"
        assert 0 <= scores[0]["Score"] < 10

        kube_api.add_node("late", labels={"network-topology": "high-speed"})  # reaches it through the watch
        deadline = time.monotonic() + 10
        while (result := _post(conn, "filter", _by_name(fussy, ["late"]))[1])["NodeNames"] != ["late"]:
            assert time.monotonic() < deadline, result
            time.sleep(0.05)

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        assert 'scheduler_extender_requests_total{code="400",verb="filter"} 1.0' in metrics
        assert 'scheduler_extender_request_duration_seconds_count{verb="prioritize"} 1.0' in metrics
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


def test_listen_address_taken_names_the_option(kube_api_kubeconfig, tmp_path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(NETWORK_AWARE_CONFIG)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _run(["--config", str(config), "--kubeconfig", str(kube_api_kubeconfig),
                     "--listen", f"127.0.0.1:{port}"])
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in out and "--listen" in out


def test_bad_config_and_bad_listen_are_named(tmp_path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(NETWORK_AWARE_CONFIG.replace("NetworkAware", "NoSuchPlugin"))
    proc = _run(["--config", str(config), "--kubeconfig", "/dev/null"])
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "NoSuchPlugin" in out
    proc = _run(["--config", str(config), "--listen", "8888"])
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "--listen" in out and "'8888' is not host:port" in out


def test_kept_alive_connection_answers_without_waiting_for_delayed_acks() -> None:
    """Each answer is written as headers then body; with Nagle's algorithm on, the body waits for the
    client's delayed ACK of the headers (40 ms on Linux), on every request of a kept-alive connection.
    Timed against the server `python -m scheduler extender` runs, in-process, with an empty cache."""
    metrics = ExtenderMetrics()
    extender = Extender(Cache(), build_profiles(parse_config(yaml.safe_load(NETWORK_AWARE_CONFIG), "config",
                                                                 bundled_plugins.registry())), metrics)
    server = HealthServer("127.0.0.1", 0, registry=metrics.registry, healthy=lambda: (True, "ok"),
                          ready=lambda: (True, "ok"), post=extender.handle)
    server.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        body = _by_name(kube_pod("p"), [])
        seconds = []
        for _ in range(15):
            start = time.perf_counter()
            assert _post(conn, "prioritize", body) == (200, [])
            seconds.append(time.perf_counter() - start)
        conn.close()
    finally:
        server.stop()
    assert statistics.median(seconds) < 0.02, seconds


def _server_with_empty_cache() -> HealthServer:
    metrics = ExtenderMetrics()
    extender = Extender(Cache(), build_profiles(parse_config(yaml.safe_load(NETWORK_AWARE_CONFIG), "config",
                                                                 bundled_plugins.registry())), metrics)
    return HealthServer("127.0.0.1", 0, registry=metrics.registry, healthy=lambda: (True, "ok"),
                        ready=lambda: (True, "ok"), post=extender.handle)


def test_stop_closes_the_connections_kube_scheduler_keeps_alive() -> None:
    """A stopped extender (SIGTERM, a rollout) answers no more requests on a connection kube-scheduler
    keeps open: its next request fails at once and Go's transport dials again, instead of being answered
    from a cache that no longer follows the API server."""
    server = _server_with_empty_cache()
    server.start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        assert _post(conn, "prioritize", _by_name(kube_pod("p"), [])) == (200, [])
        server.stop()
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            _post(conn, "prioritize", _by_name(kube_pod("p"), []))
    finally:
        conn.close()


def test_requests_the_listener_cannot_serve_get_an_error_and_the_connection_closes() -> None:
    """A POST without Content-Length (411), a request line that is not HTTP/1.x (400) and a method other
    than GET and POST (501) are answered and the connection closed: the stream cannot be read further.
    A client that sends Expect: 100-continue (curl, for large bodies) gets its 100 and then the answer."""
    server = _server_with_empty_cache()
    server.start()
    try:
        for raw, status in ((b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", b" 411 "),
                            (b"GARBAGE\r\n\r\n", b" 400 "),
                            (b"DELETE /filter HTTP/1.1\r\nHost: x\r\n\r\n", b" 501 ")):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                sock.sendall(raw)
                answer = b""
                while chunk := sock.recv(65536):  # read to EOF: the server closes
                    answer += chunk
            assert answer.split(b"\r\n", 1)[0].startswith(b"HTTP/1.1" + status), answer
        body = _by_name(kube_pod("p"), [])
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n"
                         b"\r\n" % len(body))
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(body)
            reader = sock.makefile("rb")
            assert reader.readline().startswith(b"HTTP/1.1 200 ")
            headers = {}
            while (line := reader.readline()) != b"\r\n":
                name, _, value = line.decode().partition(":")
                headers[name.lower()] = value.strip()
            assert reader.read(int(headers["content-length"])) == b"[]"
    finally:
        server.stop()
