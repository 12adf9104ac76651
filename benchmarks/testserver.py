"""The in-repo Kubernetes API test server (kubeapi_testserver) in a process of its own, for the end-to-end benchmark.

It is a stand-in for kube-apiserver: a Python HTTP server with an in-memory store. A rate through it measures
our client path (requests, watches, binding, events) with a server that costs about as much CPU as the
scheduler, on the same 2 cores; it is not a figure for a real API server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from benchmarks.inprocess import REPO


def stop(proc: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM, then SIGKILL if the process is still there after ``grace`` seconds; reaped either way."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_test_server(startup_timeout: float = 30.0) -> Iterator[Path]:
    """Start `python -m kubeapi_testserver` on a free port; yields its kubeconfig; stops it on exit."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        proc = subprocess.Popen([sys.executable, "-m", "kubeapi_testserver", "--port", str(port),
                                 "--kubeconfig", str(kubeconfig)], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait_ready(proc, f"http://127.0.0.1:{port}/version", kubeconfig, startup_timeout)
            yield kubeconfig
        finally:
            stop(proc, grace=10)


def _wait_ready(proc: subprocess.Popen, url: str, kubeconfig: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API test server exited at start (code {proc.returncode}): "
                               f"{(proc.stderr.read() if proc.stderr else '').strip()[-1000:]}")
        try:
            with urlopen(url, timeout=1) as resp:
                resp.read()
            if kubeconfig.exists():
                return
        except (URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the API test server did not answer {url} within {timeout:.0f}s")
