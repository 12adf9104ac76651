"""`python -m scheduler` as a user runs it: a subprocess with a config enabling NetworkAware and a
kubeconfig for the Kubernetes API test server (kubeapi_testserver, a stand-in for kube-apiserver)."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import pytest

from kubeapi_testserver.fixtures import free_port
from scheduler import KUBE_SCHEDULER_VERSION, __version__
from tests.scheduler_api.harness import (
    NETWORK_AWARE_CONFIG,
    SCHEDULER,
    scheduler_process,
    unreachable_kubeconfig,
)

pytestmark = pytest.mark.api



def _write_config(tmp_path: Path, kubeconfig: str, extra: str = "") -> Path:
    """A config enabling NetworkAware, with its kubeconfig path pointed at the test server."""
    port = free_port()
    text = (
        NETWORK_AWARE_CONFIG + f"clientConnection:\n  kubeconfig: {kubeconfig}\n"
        f"healthzBindAddress: 127.0.0.1:{port}\nmetricsBindAddress: 127.0.0.1:{port}\n" + extra
    )
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(text)
    return path


def _run(args: list[str]) -> subprocess.Popen:
    return scheduler_process(args)


def test_places_pods_end_to_end_and_stops_cleanly(kube_api, kube_api_kubeconfig, tmp_path) -> None:
    kube_api.add_nodes(2)
    kube_api.add_node("fast", labels={"network-topology": "high-speed"})
    config = _write_config(tmp_path, str(kube_api_kubeconfig))
    proc = _run(["--config", str(config)])
    try:
        kube_api.add_pod("plain", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.add_pod(
            "wants-speed",
            cpu="100m",
            scheduler_name=SCHEDULER,
            annotations={"my-network-preference": "high-speed"},
        )
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 2, timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert kube_api.bound_pods()["default/wants-speed"] == "fast"
    assert "pod default/wants-speed scheduled to fast" in out


def test_kubeconfig_flag_overrides_config(kube_api, kube_api_kubeconfig, tmp_path) -> None:
    kube_api.add_nodes(1)
    config = _write_config(tmp_path, "/nonexistent/scheduler.conf")
    proc = _run(["--config", str(config), "--kubeconfig", str(kube_api_kubeconfig), "--log-level", "debug"])
    try:
        kube_api.add_pod("p", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: kube_api.bound_pods(), timeout=30)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "node node-0 feasible" in out  # debug: each node's verdict


def test_version_names_the_kube_scheduler_release_it_follows() -> None:
    proc = _run(["--version"])
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out.strip() == f"kubelab-scheduler {__version__} (decides as kube-scheduler {KUBE_SCHEDULER_VERSION})"
    assert KUBE_SCHEDULER_VERSION == "1.36"  # the lab's minor, whose real decisions the replay test checks


def test_bad_config_stops_with_the_field_named(tmp_path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(NETWORK_AWARE_CONFIG.replace("NetworkAware", "NoSuchPlugin"))
    proc = _run(["--config", str(config), "--kubeconfig", "/dev/null"])
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "NoSuchPlugin" in out


def test_missing_kubeconfig_named(tmp_path) -> None:
    config = _write_config(tmp_path, "/nonexistent/scheduler.conf")
    proc = _run(["--config", str(config)])
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "/nonexistent/scheduler.conf" in out and "--kubeconfig" in out


def test_unreachable_server_named_and_retried(tmp_path) -> None:
    kubeconfig, url = unreachable_kubeconfig(tmp_path / "kubeconfig")
    config = _write_config(tmp_path, str(kubeconfig))
    proc = _run(["--config", str(config)])
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if sum("cannot reach the Kubernetes API server" in x for x in lines) >= 2:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    out = "".join(lines) + rest
    assert f"cannot reach the Kubernetes API server at {url}" in out
    assert "retrying in 1s" in out and "retrying in 2s" in out
    assert proc.returncode == 0


def test_health_port_taken_names_the_setting(kube_api_kubeconfig, tmp_path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "c.yaml"
        config.write_text(
            NETWORK_AWARE_CONFIG
            + f"healthzBindAddress: 127.0.0.1:{port}\nmetricsBindAddress: 127.0.0.1:{port}\n"
        )
        proc = _run(["--config", str(config), "--kubeconfig", str(kube_api_kubeconfig)])
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "healthzBindAddress" in out and str(config) in out
