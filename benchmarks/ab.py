"""A/B: the end-to-end CPU per bound pod of two scheduler checkouts on the same traffic, interleaved.

    .venv/bin/python -m benchmarks.ab --a /work/main --b . --nodes 500 --pods 2000 --rounds 3

Each round runs A then B (then B then A in the next round, so neither always goes first on a warmer
machine), each on a fresh in-repo API test server started from this checkout (so both read the same
objects: the shape of a real kube-apiserver's, tests/kubeapi/test_real_traffic_shape.py), each scheduler as
`python -m scheduler` from its own checkout with that checkout's .venv. Reports every run and the median
CPU ms per bound pod of each side, and B's change against A. Absolute figures move with the machine and its
load; the ratio measured in one interleaved run is the figure to compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks import cluster, endtoend, report, testserver


def run_once(checkout: Path, nodes: int, pods: int, timeout: float, workload: str = "plain") -> dict:
    with testserver.running_test_server() as kubeconfig:
        return endtoend.run(endtoend.EndToEndOptions(
            kubeconfig=kubeconfig, nodes=nodes, pods=pods, timeout=timeout, server_label=report.TEST_SERVER_LABEL,
            scheduler_checkout=checkout.resolve(), workload=workload))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", type=Path, required=True, help="checkout A (the baseline), e.g. /work/main")
    p.add_argument("--b", type=Path, default=Path("."), help="checkout B (default: this one)")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--workload", choices=cluster.WORKLOADS, default="plain",
                   help="what the pending pods carry (benchmarks/cluster.py pending_pod)")
    p.add_argument("--json", type=Path, help="write every run here")
    args = p.parse_args(argv)
    for side in (args.a, args.b):
        if not (side / "scheduler" / "__main__.py").is_file():
            p.error(f"{side} is not a kubelab checkout (no scheduler/__main__.py)")
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    for i in range(args.rounds):
        order = (("A", args.a), ("B", args.b)) if i % 2 == 0 else (("B", args.b), ("A", args.a))
        for label, checkout in order:
            row = run_once(checkout, args.nodes, args.pods, args.timeout, args.workload)
            runs[label].append(row)
            print(f"round {i + 1} {label} ({checkout}): {row.get('scheduler_cpu_ms_per_pod')} CPU ms/pod "
                  f"({row.get('scheduler_cpu_ms_per_pod_settled')} with its events settled, "
                  f"{row.get('events_dropped')} events dropped), "
                  f"{row.get('pods_per_second')} pods/s, bound {row.get('bound')}/{args.pods}, "
                  f"decoded {row.get('decoded_bytes_per_pod'):,} B/pod, "
                  f"requests/pod {row.get('requests_per_pod')}", flush=True)
    medians = {k: statistics.median(r["scheduler_cpu_ms_per_pod"] for r in v) for k, v in runs.items()}
    settled = {k: statistics.median(r["scheduler_cpu_ms_per_pod_settled"] for r in v) for k, v in runs.items()}
    rates = {k: statistics.median(r["pods_per_second"] for r in v) for k, v in runs.items()}
    print(f"median CPU ms per bound pod, first to last binding: A {medians['A']:.3f}, B {medians['B']:.3f} "
          f"({(medians['B'] / medians['A'] - 1) * 100:+.1f}%); with the events settled: A {settled['A']:.3f}, "
          f"B {settled['B']:.3f} ({(settled['B'] / settled['A'] - 1) * 100:+.1f}%); "
          f"pods/s A {rates['A']}, B {rates['B']}")
    if args.json:
        args.json.write_text(json.dumps({"nodes": args.nodes, "pods": args.pods, "workload": args.workload, "runs": runs,
                                         "median_cpu_ms_per_pod": medians,
                                         "median_cpu_ms_per_pod_settled": settled}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
