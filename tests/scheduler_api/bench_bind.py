"""Benchmark (not a test): pods bound per second end to end through the API.

    .venv/bin/python -m tests.scheduler_api.bench_bind --nodes 100 --pods 2000 [--qps 0] [--burst 100]

Starts the Kubernetes API test server (tests/kubeapi, a stand-in for kube-apiserver) in its own
process, creates the nodes and a backlog of pending pods, then starts the real scheduler (in this
process, as `python -m scheduler` builds it) and measures from start to the last successful binding
(scheduler_count of bound pods, no polling of the server during the run). Prints the rate and the
spread of pods per node. kube-scheduler's reference: ~580 pods/s unthrottled, ~54 pods/s with its
default client limits (qps 50, burst 100) on a 2-core machine with a local API server.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.request import Request, urlopen

from tests.scheduler_api.harness import SCHEDULER, config_with, make_scheduler


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _process_cpu(pid: int) -> float:
    """user+system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _post(url: str, body: dict) -> None:
    req = Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urlopen(req) as resp:
        resp.read()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--qps", type=float, default=0.0, help="client qps (0: unthrottled)")
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--workers", type=int, default=16, help="binder threads")
    p.add_argument("--plugins", default="", help="comma-separated extra multiPoint plugins, e.g. LeastLoaded")
    args = p.parse_args()

    port = _free_port()
    tmp = Path(tempfile.mkdtemp())
    kubeconfig = tmp / "kubeconfig"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.kubeapi",
            "--port",
            str(port),
            "--kubeconfig",
            str(kubeconfig),
            "--nodes",
            str(args.nodes),
            "--node-cpu",
            "64",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urlopen(f"{base}/version").read()
                break
            except OSError:
                time.sleep(0.1)
        for i in range(args.pods):
            _post(
                f"{base}/api/v1/namespaces/default/pods",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"bench-{i}"},
                    "spec": {
                        "schedulerName": SCHEDULER,
                        "containers": [
                            {
                                "name": "c",
                                "image": "pause",
                                "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}},
                            }
                        ],
                    },
                },
            )
        plugins = [{"name": n} for n in args.plugins.split(",") if n]
        sched = make_scheduler(
            kubeconfig, config_with(plugins or None), qps=args.qps, bind_workers=args.workers
        )
        sched.client.limiter.burst = args.burst
        t0 = time.perf_counter()
        cpu0 = os.times()
        server_cpu0 = _process_cpu(server.pid)
        sched.start()
        while sched.scheduled_count < args.pods:
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        cpu1 = os.times()
        server_cpu = _process_cpu(server.pid) - server_cpu0
        cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        counts = sched.cache.counts()
        per_node = Counter(info.name for info in sched.cache.snapshot().nodes for _ in range(info.pod_count))
        sched.recorder.flush(60)
        sched.stop()
        spread = (min(per_node.values()), max(per_node.values())) if per_node else (0, 0)
        print(
            f"nodes={args.nodes} pods={args.pods} qps={args.qps or 'unlimited'} burst={args.burst} "
            f"workers={args.workers}: {elapsed:.2f}s from start (incl. initial list) -> "
            f"{args.pods / elapsed:.0f} pods/s bound; pods per node min/max {spread[0]}/{spread[1]}; "
            f"cache {counts}; scheduler process cpu {cpu:.2f}s ({cpu / elapsed:.0%} of one core); "
            f"API test server cpu {server_cpu:.2f}s ({server_cpu / elapsed:.0%})"
        )
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
