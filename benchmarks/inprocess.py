"""Decisions per second in-process: the scheduling loop's path with no API server.

What one decision costs here is what it costs in `python -m scheduler` minus the HTTP calls: queue pop,
incremental cache snapshot, Profile.schedule (filter, score, pick), assume into the cache, metrics, and the
log at INFO (to /dev/null). Nodes and the existing bound pods go in through the same watch handlers the
informers call, into the same `scheduler.runtime.scheduler.Scheduler` object the CLI builds; the binder is replaced
by a recorder (a named stand-in: binding is what the end-to-end benchmark measures). The INFO line of a
placed pod is written once its binding succeeds, by a binder thread, so it is not part of this path; an
unschedulable pod's line is.

Each size runs in its own subprocess (`python -m benchmarks.inprocess --nodes N ...`, one JSON line out) so
that peak RSS figures do not mix between sizes. Memory is reported two ways:
- ``cache_mib``: bytes still allocated after a cache and its first snapshot were filled (tracemalloc, on a
  second scheduler filled alike after the timed run, so that neither the timing nor the peak RSS includes
  tracemalloc's own cost);
- ``peak_rss_mib``: the subprocess's peak resident set (getrusage) up to the end of the timed run,
  interpreter and imports included; ``baseline_rss_mib`` is the same just before the cache was filled.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import bundled, cluster
from scheduler.runtime.client import RequestCounts

SCHEDULER_NAME = "kubelab-bench"
REPO = Path(__file__).resolve().parents[1]
# Appended to a row's plugins for each workload but the plain one (cluster.pending_pod says what each is).
WORKLOAD_ROWS = {"plain": "", "anti-affinity": ", pods with required anti-affinity",
                 "preferred-affinity": ", pods with preferred pod affinity",
                 "zone-affinity": ", 4 groups preferring their group's zone (10 zones)",
                 "spread": ", pods spread over 3 zones (DoNotSchedule)",
                 "preemption": ", high-priority pods preempting low-priority ones"}
ANTI_AFFINITY_ROW = WORKLOAD_ROWS["anti-affinity"]


def scheduler_config(scheduler_name: str = SCHEDULER_NAME, plugins: list[str] | None = None,
                     percentage: int | None = None, args: dict[str, dict[str, Any]] | None = None) -> dict:
    """A KubeSchedulerConfiguration dict: the default plugin set, plus `plugins` enabled as multiPoint."""
    profile: dict[str, Any] = {"schedulerName": scheduler_name}
    if plugins:
        profile["plugins"] = {"multiPoint": {"enabled": [{"name": p} for p in plugins]}}
    if args:
        profile["pluginConfig"] = [{"name": name, "args": a} for name, a in args.items()]
    if percentage is not None:
        profile["percentageOfNodesToScore"] = percentage
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False}, "profiles": [profile]}


class _NoClient:
    """Stand-in for scheduler.runtime.client.Client: nothing on the loop path calls the API before binding."""

    host = "http://stand-in.invalid"
    counts = RequestCounts()  # nothing is sent: stays empty

    def with_own_limiter(self) -> _NoClient:
        return self


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def run_size(nodes: int, existing: int, pods: int, *, plugins: list[str] | None = None,
             percentage: int | None = None, workload: str = "plain", seed: int = 1,
             log_to_devnull: bool = True) -> dict[str, Any]:
    """Fill a scheduler with `nodes` nodes and `existing` bound pods, then time `pods` decisions of pods of
    that `workload` (cluster.WORKLOADS; the spread workload's nodes are in 3 zones)."""
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    if workload == "preemption":
        raise ValueError("the preemption workload runs end to end only: in-process there is no API server to "
                         "evict its victims through")
    from scheduler.config import parse_config
    from scheduler.framework import build_profiles

    if log_to_devnull:  # the CLI logs at INFO (an unschedulable pod's line in the loop): pay for it as it does
        handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger = logging.getLogger("scheduler")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    registry = bundled.registry()
    profiles = build_profiles(parse_config(scheduler_config(plugins=plugins, percentage=percentage), "config",
                                           registry))
    baseline_rss = _rss_mib()
    names = [f"node-{i}" for i in range(nodes)]
    t_fill = time.perf_counter()
    sched = _filled_scheduler(profiles, names, existing, seed, workload)
    fill_seconds = time.perf_counter() - t_fill
    decided: list[str] = []
    sched.cycle.binder.submit = lambda pod, node: decided.append(node)  # type: ignore[method-assign]
    for i in range(pods):
        obj = cluster.pending_pod(f"pod-{i}", "bench", SCHEDULER_NAME, "inprocess", workload=workload, index=i)
        obj["metadata"]["uid"] = f"pod-uid-{i}"
        sched.handlers.pod_changed(obj)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while (qp := sched.queue.pop(timeout=0)) is not None:
        sched.cycle.schedule_one(qp)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    sched.recorder.close()
    peak_rss = _rss_mib()
    cache_bytes = _cache_bytes(profiles, names, existing, seed, workload)
    per_node = Counter(decided)
    return {
        "nodes": nodes, "existing_pods": existing, "pods": pods, "decisions": len(decided),
        "plugins": "default" + "".join(f"+{p}" for p in plugins or ()) + WORKLOAD_ROWS[workload],
        "workload": workload,
        "percentage_of_nodes_to_score": percentage,
        "wall_seconds": round(wall, 4), "cpu_seconds": round(cpu, 4),
        "decisions_per_second": round(len(decided) / wall, 1) if wall else None,
        "decisions_per_cpu_second": round(len(decided) / cpu, 1) if cpu else None,
        "fill_seconds": round(fill_seconds, 3),
        "cache_mib": round(cache_bytes / 2**20, 1),
        "baseline_rss_mib": round(baseline_rss, 1),
        "peak_rss_mib": round(peak_rss, 1),
        "pods_per_node": spread(per_node, names),
    }


def _filled_scheduler(profiles: Any, names: list[str], existing: int, seed: int, workload: str = "plain") -> Any:
    """A Scheduler (no API server behind it) holding the nodes and `existing` bound pods, given through the
    informers' handlers, with its first snapshot taken (it clones every node: part of the cache's footprint)."""
    from scheduler.runtime.scheduler import RuntimeSettings, Scheduler

    sched = Scheduler(_NoClient(), profiles, RuntimeSettings(serve=(), seed=seed))  # type: ignore[arg-type]
    for i, name in enumerate(names):
        sched.handlers.node_changed(cluster.node(name, "inprocess", zone=cluster.zone_of(workload, i)))
    for obj in cluster.existing_pods(existing, names, random.Random(seed)):
        sched.handlers.pod_changed(obj)
    sched.cache.snapshot()
    return sched


def _cache_bytes(profiles: Any, names: list[str], existing: int, seed: int, workload: str) -> int:
    """What a filled scheduler holds (tracemalloc), measured on a second one built after the timed run and
    the peak RSS reading: tracemalloc's own bookkeeping (a record per live block, ~37 MiB at 5,000 nodes and
    10,000 pods) would otherwise count in the peak."""
    tracemalloc.start()
    try:
        sched = _filled_scheduler(profiles, names, existing, seed, workload)
        allocated, _ = tracemalloc.get_traced_memory()
        sched.recorder.close()
        return allocated
    finally:
        tracemalloc.stop()


def spread(per_node: Counter[str], node_names: list[str]) -> dict[str, float]:
    """min / max / population stddev of pods per node, counting nodes that got none."""
    counts = [per_node.get(name, 0) for name in node_names]
    if not counts:
        return {"min": 0, "max": 0, "stddev": 0.0}
    mean = sum(counts) / len(counts)
    var = sum((c - mean) ** 2 for c in counts) / len(counts)
    return {"min": min(counts), "max": max(counts), "stddev": round(var ** 0.5, 3)}


def run_in_subprocess(nodes: int, existing: int, pods: int, *, plugins: list[str] | None = None,
                      percentage: int | None = None, workload: str = "plain", seed: int = 1,
                      timeout: float = 900) -> dict[str, Any]:
    """run_size in a fresh interpreter (so peak RSS is this size's alone); returns its JSON result."""
    cmd = [sys.executable, "-m", "benchmarks.inprocess", "--nodes", str(nodes), "--existing", str(existing),
           "--pods", str(pods), "--seed", str(seed)]
    if plugins:
        cmd += ["--plugins", ",".join(plugins)]
    if percentage is not None:
        cmd += ["--percentage", str(percentage)]
    if workload != "plain":
        cmd += ["--workload", workload]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"in-process benchmark at {nodes} nodes failed (exit {proc.returncode}):\n"
                           f"{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.inprocess", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--existing", type=int, default=10_000, help="pods already bound (default 10,000)")
    p.add_argument("--pods", type=int, default=2000, help="pods to decide (default 2,000)")
    p.add_argument("--plugins", default="", help="extra multiPoint plugins, e.g. LeastLoaded")
    p.add_argument("--percentage", type=int, default=None, help="percentageOfNodesToScore (default: adaptive)")
    p.add_argument("--workload", choices=[w for w in cluster.WORKLOADS if w != "preemption"], default="plain",
                   help="what the decided pods carry (benchmarks/cluster.py pending_pod): required anti-affinity, "
                        "preferred pod affinity, or topology spread over zones; default plain")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the timed decisions to FILE")
    args = p.parse_args(argv)
    plugins = [n for n in args.plugins.split(",") if n]
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(run_size, args.nodes, args.existing, args.pods, plugins=plugins,
                                  percentage=args.percentage, workload=args.workload, seed=args.seed)
        profiler.dump_stats(args.profile)
    else:
        result = run_size(args.nodes, args.existing, args.pods, plugins=plugins, percentage=args.percentage,
                          workload=args.workload, seed=args.seed)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
