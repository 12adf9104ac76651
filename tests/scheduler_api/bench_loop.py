"""Benchmark (not a test): decisions per second of the scheduling loop path, without the network.

    .venv/bin/python -m tests.scheduler_api.bench_loop --nodes 1000 --pods 3000

What one decision costs in the running scheduler minus the HTTP calls: queue pop, incremental cache
snapshot, Profile.schedule (filter, score, pick), assume into the cache, the INFO log line's explain().
Pods are fed through the same Scheduler object `python -m scheduler` builds; binding is replaced by a
recorder (named stand-in: no API server is involved, so the bind rate is measured by bench_bind.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

import yaml

from scheduler.app import RuntimeSettings, Scheduler
from scheduler.config import parse_config
from scheduler.framework import build_profiles
from tests.scheduler_api.harness import SCHEDULER, config_with


class _NoClient:
    """Stand-in for scheduler.client.Client: the loop path makes no API call before binding."""

    host = "http://stand-in"

    def with_own_limiter(self) -> _NoClient:
        return self


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--plugins", default="", help="extra multiPoint plugins, e.g. LeastLoaded,NetworkAware")
    args = p.parse_args()
    plugins = [{"name": n} for n in args.plugins.split(",") if n]
    cfg = parse_config(yaml.safe_load(config_with(plugins or None)))
    settings = RuntimeSettings(serve=(), seed=1)
    sched = Scheduler(_NoClient(), build_profiles(cfg), settings)  # type: ignore[arg-type]
    bound: list[tuple[str, str]] = []
    sched.binder.submit = lambda pod, node: bound.append((pod.key, node))  # type: ignore[method-assign]
    for i in range(args.nodes):
        sched.handle_node(
            {
                "metadata": {"name": f"node-{i}", "labels": {"zone": f"z{i % 3}"}},
                "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
            }
        )
    for i in range(args.pods):
        sched.handle_pod(
            {
                "metadata": {"name": f"p-{i}", "namespace": "default", "uid": f"u-{i}"},
                "spec": {
                    "schedulerName": SCHEDULER,
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}
                    ],
                },
            }
        )
    t0 = time.perf_counter()
    while (qp := sched.queue.pop(timeout=0)) is not None:
        sched.schedule_one(qp)
    elapsed = time.perf_counter() - t0
    per_node = Counter(node for _, node in bound)
    print(
        f"nodes={args.nodes} pods={args.pods} plugins=defaults{'+' + args.plugins if args.plugins else ''}: "
        f"{len(bound)} decisions in {elapsed:.2f}s -> {len(bound) / elapsed:.0f} decisions/s "
        f"(loop path incl. snapshot, assume, log line); pods per node min/max "
        f"{min(per_node.values())}/{max(per_node.values())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
