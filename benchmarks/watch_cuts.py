"""Watches cut while a big burst is placed: ``--pods`` pending pods on ``--nodes`` nodes of the in-repo API test
server (in this process), ``python -m scheduler`` placing them, and every open watch cut ``--cuts`` times at even
steps of the burst (the server closes the sockets, as a restarting API server or a load balancer does). The
scheduler relists where its resourceVersion is gone and resumes otherwise; the figures say whether every pod was
bound exactly once (the server's own record of successful bindings), how long the burst took, how many relists
the scheduler made and its peak memory (VmHWM).

    .venv/bin/python -m benchmarks.watch_cuts --nodes 5000 --pods 10000 --cuts 3

A benchmark, not a test: minutes at this size on a 2-core machine (the server shares the cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.inprocess import SCHEDULER_NAME, scheduler_config
from benchmarks.scheduler_process import SchedulerProcess
from kubeapi_testserver.server import KubeApiServer


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _relists(metrics: str) -> dict[str, float]:
    counts: dict[str, float] = {}
    for line in metrics.splitlines():
        if line.startswith("scheduler_informer_relists_total{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels[len("scheduler_informer_relists_total"):]] = float(value)
    return counts


def run(nodes: int, pods: int, cuts: int, timeout: float) -> dict[str, Any]:
    server = KubeApiServer().start()
    workdir = tempfile.TemporaryDirectory(prefix="kubelab-watch-cuts-")
    try:
        kubeconfig = server.write_kubeconfig(Path(workdir.name) / "kubeconfig")
        server.add_nodes(nodes, prefix="cut-node-", cpu="32", memory="128Gi", pods=110)
        for i in range(pods):
            server.add_pod(f"cut-{i}", cpu="100m", scheduler_name=SCHEDULER_NAME)
        process = SchedulerProcess(scheduler_config(), kubeconfig, qps=0, burst=100)
        process.start()
        try:
            if not process.wait_ready(timeout):
                raise SystemExit(f"the scheduler did not sync within {timeout:.0f}s: {process.log_tail()}")
            start = time.monotonic()
            steps = [pods * (k + 1) // (cuts + 1) for k in range(cuts)]
            cut_at: list[float] = []
            bound = 0
            while bound < pods and time.monotonic() - start < timeout:
                time.sleep(0.5)
                process.check_running()
                bound = len(server.bound_pods("default"))
                if steps and bound >= steps[0]:
                    server.drop_watches()
                    cut_at.append(round(time.monotonic() - start, 1))
                    steps.pop(0)
            seconds = time.monotonic() - start
            peak = _peak_rss_mib(process.pid)
            relists = _relists(process._get("/metrics")[1])
        finally:
            process.stop()
        bindings = Counter(r.name for r in server.requests if r.resource == "pods/binding" and r.code == 201)
        return {"nodes": nodes, "pods": pods, "cuts": len(cut_at), "cut_at_seconds": cut_at, "bound": bound,
                "bound_twice": sum(1 for n in bindings.values() if n > 1),
                "seconds": round(seconds, 1), "pods_per_second": round(bound / seconds, 1) if seconds else None,
                "scheduler_peak_rss_mib": peak, "relists": relists,
                "server": "in-repo API test server (kubeapi_testserver), in the benchmark's process"}
    finally:
        server.stop()
        workdir.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.watch_cuts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--cuts", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    result = run(args.nodes, args.pods, args.cuts, args.timeout)
    print(json.dumps(result, indent=2))
    return 0 if result["bound"] == args.pods and result["bound_twice"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
