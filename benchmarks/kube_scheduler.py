"""End to end with a real kube-scheduler binary (`--kube-scheduler PATH`): the binary schedules the
benchmark's pending pods alone, and then asking our extender (`python -m scheduler extender`,
nodeCacheCapable, on loopback), each through the API server under test; benchmarks.endtoend creates and
deletes the objects around each run.

kube-scheduler runs with `--secure-port=0` (no HTTPS endpoint, so no port clash with a cluster's own
kube-scheduler and no authentication delegation to set up), leader election off, and a client limit high
enough not to throttle it (its default is qps 50). The clock starts at the first binding the API server shows
(kube-scheduler reports no "caches synced" we could wait for) and stops when no pod is left unbound; both are
read by listing the unbound pods every POLL seconds.

Without a binary there is nothing to measure (CI has none): the row says so, and nothing stands in for one.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from benchmarks import bundled, testserver
from benchmarks.inprocess import SCHEDULER_NAME, scheduler_config
from labkit.scheduler_deploy.kube_scheduler_config import check_kube_scheduler_config

NOT_MEASURED = "not measured: no kube-scheduler binary (pass --kube-scheduler PATH)"
UNTHROTTLED_QPS = 10_000.0  # kube-scheduler treats qps 0 as its default 50
POLL = 0.5
# The extender in the benchmark runs only what kube-scheduler has not (as deploy-scheduler's extender mode):
# NetworkAware (every benchmark pod passes it) and LeastLoaded.
EXTENDER_PLUGINS = ("NetworkAware", "LeastLoaded")


class KubeSchedulerError(RuntimeError):
    """The binary or the extender did not run; the message carries the last lines of its log."""


def kube_scheduler_config(kubeconfig: Path, qps: float, burst: int, extender_port: int | None) -> dict[str, Any]:
    """kube-scheduler's configuration for one run, checked against its v1 fields."""
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False, "resourceLock": "leases", "resourceName": SCHEDULER_NAME,
                           "resourceNamespace": "kube-system"},
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": float(qps or UNTHROTTLED_QPS), "burst": burst},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
    }
    if extender_port is not None:
        config["extenders"] = [{
            "urlPrefix": f"http://127.0.0.1:{extender_port}", "filterVerb": "filter", "prioritizeVerb": "prioritize",
            "weight": 1, "httpTimeout": "5s", "nodeCacheCapable": True, "ignorable": False}]
    check_kube_scheduler_config(config)
    return config


def extender_config() -> dict[str, Any]:
    config = scheduler_config(plugins=list(EXTENDER_PLUGINS))
    config["profiles"][0]["plugins"]["multiPoint"]["disabled"] = [{"name": "*"}]
    return config


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@contextlib.contextmanager
def _process(cmd: list[str], log: Path, what: str) -> Iterator[subprocess.Popen[bytes]]:
    try:
        with log.open("ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    except OSError as err:
        raise KubeSchedulerError(f"{what} did not start: {err}") from None
    try:
        yield proc
    finally:
        testserver.stop(proc)


def _alive(proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    if proc.poll() is not None:
        raise KubeSchedulerError(f"{what} exited with status {proc.returncode}; its last lines:\n{_tail(log)}")


def _wait_extender_ready(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _alive(proc, log, "the extender")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
            return
        time.sleep(0.2)
    raise KubeSchedulerError(f"the extender's caches did not sync within {timeout:.0f}s:\n{_tail(log)}")


def measure(binary: Path, kubeconfig: Path, namespace: str, pods: int, *, with_extender: bool, qps: float,
            burst: int, timeout: float, unbound: Callable[[str], int],
            echo: Callable[[str], None] = lambda _line: None) -> dict[str, Any]:
    """Run the binary (and the extender) until `unbound(namespace)` is 0 or `timeout`; the timing fields."""
    if not binary.is_file():
        raise KubeSchedulerError(f"--kube-scheduler {binary}: no such file")
    with tempfile.TemporaryDirectory(prefix="kubelab-kube-scheduler-") as tmp:
        work = Path(tmp)
        port = _free_port() if with_extender else None
        config_file = work / "kube-scheduler.yaml"
        config_file.write_text(yaml.safe_dump(kube_scheduler_config(kubeconfig, qps, burst, port)))
        with contextlib.ExitStack() as stack:
            if port is not None:
                (work / "extender.yaml").write_text(yaml.safe_dump(extender_config()))
                log = work / "extender.log"
                extender = stack.enter_context(_process(
                    [sys.executable, "-m", "scheduler", "extender", "--config", str(work / "extender.yaml"),
                     "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}", "--log-level", "warning",
                     *bundled.CLI_ARGS],
                    log, "the extender"))
                _wait_extender_ready(extender, port, log, timeout)
            log = work / "kube-scheduler.log"
            echo(f"running {binary}{' with the extender' if port else ''}")
            t_start = time.perf_counter()
            proc = stack.enter_context(_process([str(binary), f"--config={config_file}", "--secure-port=0"],
                                                log, f"kube-scheduler ({binary})"))
            t_first, first_bound = None, 0
            while True:
                _alive(proc, log, f"kube-scheduler ({binary})")
                left = unbound(namespace)
                t_done = time.perf_counter()
                if t_first is None and left < pods:
                    t_first, first_bound = t_done, pods - left
                if not left or t_done - t_start > timeout:
                    break
                time.sleep(POLL)
    bound = pods - left
    from_first = (t_done - t_first) if t_first is not None else None
    return {
        "scheduler": "kube-scheduler + extender (nodeCacheCapable)" if with_extender else "kube-scheduler",
        "binary": str(binary),
        "bound_by_scheduler": bound,
        "timed_out": bool(left),
        "seconds_from_start": round(t_done - t_start, 3),
        "pods_per_second": round((bound - first_bound) / from_first, 1) if from_first else None,
        "pods_per_second_from_start": round(bound / (t_done - t_start), 1),
    }


def unbound_pods(api: Any) -> Callable[[str], int]:
    """How many pods of the namespace no scheduler has bound yet, as the API server says."""
    def count(namespace: str) -> int:
        resp = api.list_namespaced_pod(namespace, field_selector="spec.nodeName=", _preload_content=False)
        return len(json.loads(resp.data)["items"])
    return count
