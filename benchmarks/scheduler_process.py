"""The scheduler as users run it, `python -m scheduler`, in a process of its own, and what it costs.

For the end-to-end benchmark: the scheduler's CPU time is read from /proc/PID/stat (user + system of that
process alone, so the API server's share and the benchmark's own are excluded; Linux, clock ticks of 10 ms),
and what it asked of the API server from its /metrics, where the scheduler's client counts every request it
sends by verb and resource and the watch bytes it decodes (scheduler.runtime.client.RequestCounts: counted
client-side, so the same figures come from the test server and from a real API server).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks import bundled
from benchmarks.inprocess import REPO

_CLOCK_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    """The scheduler process at one moment: CPU seconds used so far and its client's counters."""

    at: float  # time.perf_counter()
    cpu_seconds: float
    requests: dict[str, float]  # "VERB resource" -> requests sent
    watch_bytes: dict[str, float]  # resource -> watch bytes decoded
    events_dropped: float
    answer_bytes: dict[str, float]  # resource -> bytes of whole answers decoded (lists, bindings, events)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (its threads included, its children not): /proc/PID/stat
    fields 14 and 15 (proc(5)), after the command name, which may itself hold spaces or parentheses."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICK


def parse_metrics(text: str) -> tuple[dict[str, float], dict[str, float], float, dict[str, float]]:
    """(requests by "VERB resource", watch bytes by resource, events dropped, answer bytes by resource) from
    /metrics text."""
    requests: dict[str, float] = {}
    watch_bytes: dict[str, float] = {}
    answer_bytes: dict[str, float] = {}
    dropped = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "scheduler_client_requests_total":
                requests[f"{s.labels['verb']} {s.labels['resource']}"] = s.value
            elif s.name == "scheduler_watch_decoded_bytes_total":
                watch_bytes[s.labels["resource"]] = s.value
            elif s.name == "scheduler_client_answer_decoded_bytes_total":
                answer_bytes[s.labels["resource"]] = s.value
            elif s.name == "scheduler_events_dropped":
                dropped = s.value
    return requests, watch_bytes, dropped, answer_bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SchedulerProcess:
    """`python -m scheduler --config <config> --kubeconfig <kubeconfig> --leader-elect false`, its /healthz,
    /readyz and /metrics on a free loopback port, its log (at the default level, info) kept in a file."""

    def __init__(self, config: dict[str, Any], kubeconfig: Path, *, qps: float, burst: int,
                 checkout: Path | None = None, plugin_folders: tuple[Path, ...] = (),
                 extra_args: tuple[str, ...] = ()) -> None:
        self.plugin_folders = plugin_folders  # loaded with --plugins after the bundled ones
        self.extra_args = extra_args  # more options, e.g. --feature-gates
        self.port = _free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="kubelab-bench-scheduler-")
        self.config_path = Path(self._dir.name) / "config.yaml"
        self.log_path = Path(self._dir.name) / "scheduler.log"
        address = f"127.0.0.1:{self.port}"
        config = dict(config, clientConnection={"qps": qps, "burst": burst},
                      healthzBindAddress=address, metricsBindAddress=address)
        self.config_path.write_text(yaml.safe_dump(config))
        self.kubeconfig = kubeconfig
        # Another checkout's scheduler (an A/B comparison, benchmarks/ab.py) runs with that checkout's venv.
        self.checkout = checkout or REPO
        venv_python = self.checkout / ".venv" / "bin" / "python"
        self.python = str(venv_python) if checkout is not None and venv_python.exists() else sys.executable
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(self.checkout),
                                                                        os.environ.get("PYTHONPATH")])))
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [self.python, "-m", "scheduler", "--config", str(self.config_path),
                 "--kubeconfig", str(self.kubeconfig), "--leader-elect", "false", *self._plugin_args(),
                 *self.extra_args],
                cwd=self.checkout, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def _plugin_args(self) -> list[str]:
        """--plugins for the checkout's bundled example folders; a checkout from before they were folders has
        them in-tree and takes no such option."""
        folders = [self.checkout / "plugins" / name for name in bundled.FOLDER_NAMES]
        bundled_args = [arg for folder in folders if folder.is_dir() for arg in ("--plugins", str(folder))]
        return bundled_args + [arg for folder in self.plugin_folders for arg in ("--plugins", str(folder))]

    @property
    def pid(self) -> int:
        assert self.proc is not None, "start() first"
        return self.proc.pid

    def _get(self, path: str) -> tuple[int, str]:
        try:
            with urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except URLError as exc:
            code = getattr(exc, "code", None)
            return (code or 0), str(exc)

    def wait_ready(self, timeout: float) -> bool:
        """Until /readyz answers 200 (every cache synced); False on timeout. Raises RuntimeError, with the
        end of its log, if the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_running()
            if self._get("/readyz")[0] == 200:
                return True
            time.sleep(0.02)
        return False

    def check_running(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"python -m scheduler exited (code {self.proc.returncode}): "
                               f"{self.log_tail()}")

    def sample(self) -> Sample:
        """CPU first, then /metrics (the scrape's own CPU then falls after this sample's reading)."""
        at, cpu = time.perf_counter(), cpu_seconds(self.pid)
        code, text = self._get("/metrics")
        if code != 200:
            raise RuntimeError(f"the scheduler's /metrics answered {code}: {text[:300]}")
        requests, watch_bytes, dropped, answer_bytes = parse_metrics(text)
        return Sample(at, cpu, requests, watch_bytes, dropped, answer_bytes)

    def settled_sample(self, quiet: float = 0.3, timeout: float = 5.0) -> Sample:
        """A sample once its request counts stop moving (events are sent after the bindings,
        asynchronously), at most `timeout` seconds from now."""
        last = self.sample()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(quiet)
            now = self.sample()
            if now.requests == last.requests:
                return now
            last = now
        return last

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._dir.cleanup()

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return self.log_path.read_text()[-chars:].strip()
        except OSError:
            return "(no log)"

    def warnings(self) -> Counter[str]:
        """WARNING (and worse) log lines by message, digits replaced by N so repeats group together."""
        counts: Counter[str] = Counter()
        for line in self.log_path.read_text().splitlines():
            match = _LOG_LINE.match(line)
            if match and match["level"] in ("WARNING", "ERROR", "CRITICAL"):
                counts[re.sub(r"\d+", "N", match["message"])] += 1
        return counts


# scheduler.cli's log format: "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LOG_LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) [\w.]+: (?P<message>.*)$")


def per_pod(before: dict[str, float], after: dict[str, float], pods: int) -> dict[str, float]:
    """(after - before) / pods for every key that moved, largest first."""
    moved = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}
    return {k: round(v / pods, 4) for k, v in sorted(moved.items(), key=lambda kv: -kv[1])} if pods else {}
