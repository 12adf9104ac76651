"""`./lab simulate` at scale: a workload of ``--pods`` pods arriving at a rate, each running a while and then
finishing (churn), on ``--nodes`` nodes in 4 zones, through kube-scheduler's default profile, on the
simulated clock. Reports simulate's pods per wall second and per CPU second (every arrival, scheduling cycle,
binding and finish counted; per CPU second is steadier on a machine other work shares), the peak RSS of its
process, and beside them the in-process benchmark's decisions per second at the
same node count on this machine (``benchmarks.inprocess``, its own subprocess), so the two can be compared::

    .venv/bin/python -m benchmarks.simulate --nodes 5000 --pods 50000 --rounds 3   # interleaved, medians
    .venv/bin/python -m benchmarks.simulate --nodes 1000 --pods 5000 --profile sim.prof   # cProfile of the run

One JSON line out. Both inputs are written as simulate's own files (node pools, a workload) to a temporary
folder and read back through its schema, as the verb reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.inprocess import REPO, run_in_subprocess


def files(folder: Path, nodes: int, pods: int, rate: float, duration: float) -> tuple[Path, Path]:
    """A pools file of ``nodes`` nodes (8 cpu, 32Gi, 4 zones) and a workload of ``pods`` pods in two items:
    small web pods and bigger batch ones, arriving at ``rate`` per second in all, running ``duration``."""
    cluster = folder / "pools.yaml"
    cluster.write_text(f"pools:\n  - name: node\n    count: {nodes}\n"
                       "    capacity: {cpu: '8', memory: 32Gi, pods: '110'}\n    zones: [a, b, c, d]\n")
    web, batch = pods * 3 // 5, pods - pods * 3 // 5
    workload = folder / "workload.yaml"
    workload.write_text(
        "items:\n"
        f"  - {{name: web, replicas: {web}, rate: {rate * 0.6}, duration: {duration}, "
        "requests: {cpu: 500m, memory: 1Gi}}\n"
        f"  - {{name: batch, replicas: {batch}, rate: {rate * 0.4}, duration: {duration * 2}, "
        "requests: {cpu: '1', memory: 2Gi}, priority: 100}\n")
    return cluster, workload


def run(nodes: int, pods: int, rate: float, duration: float, profile_to: str | None = None) -> dict[str, Any]:
    from labkit.simulate.cli import SimulateOptions, prepare
    from labkit.simulate.engine import run_profile
    from labkit.simulate.report import summary

    with tempfile.TemporaryDirectory() as tmp:
        cluster_file, workload_file = files(Path(tmp), nodes, pods, rate, duration)
        t0 = time.perf_counter()
        cluster, workload, profiles = prepare(None, SimulateOptions(workload=workload_file, cluster=cluster_file))
        prepare_seconds = time.perf_counter() - t0
    cpu0 = time.process_time()
    if profile_to:
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(run_profile, profiles[0], cluster, workload, until=1e9)
        profiler.dump_stats(profile_to)
    else:
        result = run_profile(profiles[0], cluster, workload, until=1e9)
    cpu = time.process_time() - cpu0
    t1 = time.perf_counter()
    s = summary(result)
    report_seconds = time.perf_counter() - t1
    return {"nodes": nodes, "pods": pods, "rate": rate, "duration": duration, "bound": s["bound"],
            "pending": s["pending"], "finished": s["finished"], "scheduling_cycles": result.cycles,
            "simulated_seconds": round(result.ended_at, 1), "prepare_seconds": round(prepare_seconds, 2),
            "run_seconds": round(result.wall_seconds, 2), "report_seconds": round(report_seconds, 2),
            "cpu_seconds": round(cpu, 2), "pods_per_second": round(pods / result.wall_seconds, 1),
            "pods_per_cpu_second": round(pods / cpu, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _subprocess(args: list[str], timeout: float) -> dict[str, Any]:
    """One simulate run in a fresh interpreter (so its peak RSS is its own); its JSON line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.simulate", *args, "--rounds", "0"], check=False,
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"simulate benchmark failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.simulate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50_000)
    p.add_argument("--rate", type=float, default=100.0, help="pods arriving per simulated second (default 100)")
    p.add_argument("--duration", type=float, default=600.0, help="simulated seconds a web pod runs (batch: twice)")
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the run to FILE (one run, this process)")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds of the in-process benchmark then simulate, each in its own process; medians "
                        "reported (0: one simulate run in this process, no in-process row)")
    args = p.parse_args(argv)
    if args.rounds == 0 or args.profile:
        print(json.dumps(run(args.nodes, args.pods, args.rate, args.duration, args.profile)))
        return 0
    sims, ins = [], []
    for _ in range(args.rounds):  # interleaved: both meet the same load on a shared machine
        ins.append(run_in_subprocess(args.nodes, 10_000, 2000))
        sims.append(_subprocess(["--nodes", str(args.nodes), "--pods", str(args.pods), "--rate", str(args.rate),
                                 "--duration", str(args.duration)], timeout=3600))
    out = {key: statistics.median(r[key] for r in sims) for key in sims[0] if isinstance(sims[0][key], float)}
    out |= {key: sims[0][key] for key in ("nodes", "pods", "bound", "pending", "finished", "scheduling_cycles")}
    out["rounds"] = args.rounds
    out["inprocess_decisions_per_second"] = statistics.median(r["decisions_per_second"] for r in ins)
    out["inprocess_decisions_per_cpu_second"] = statistics.median(r["decisions_per_cpu_second"] for r in ins)
    out["ratio_to_inprocess"] = round(out["pods_per_second"] / out["inprocess_decisions_per_second"], 2)
    out["cpu_ratio_to_inprocess"] = round(out["pods_per_cpu_second"] / out["inprocess_decisions_per_cpu_second"], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
