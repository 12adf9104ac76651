"""`./lab ui`'s refusals: each a clear message and exit 2, before anything is served."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from kubeapi_testserver.fixtures import free_port
from labkit.paths import PROJECT_ROOT


def _ui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "ui", "--no-browser", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return path


def test_an_unreachable_api_server_is_named(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc = _ui("--kubeconfig", str(_kubeconfig(tmp_path / "kc", url)), "--port", "0")
    assert proc.returncode == 2
    assert f"cannot reach the API server at {url}" in " ".join(proc.stderr.split())


def test_a_busy_port_is_named_with_the_fix(kube_api_kubeconfig: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _ui("--kubeconfig", str(kube_api_kubeconfig), "--port", str(port))
    assert proc.returncode == 2
    message = " ".join(proc.stderr.split())
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in message and "--port N (0: any free port)" in message
