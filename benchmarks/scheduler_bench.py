"""The scheduler benchmark command: in-process decisions/s, end-to-end pods bound/s, spread, as tables and JSON.

    .venv/bin/python -m benchmarks.scheduler_bench [--kubeconfig FILE] [--json FILE] [--in-process-only]
        [--nodes 500] [--pods 2000] [--qps 0] [--burst 100] [--sizes 100,1000,5000] [--existing 10000]
    ./lab benchmark ...   (the same, as an invoke task)

Runs, in order:
1. in-process, default plugin set, at each of --sizes nodes with --existing bound pods, --decisions pods
   decided per size (each size in its own subprocess: separate peak RSS); then, at the largest size, pods
   that each carry required podAntiAffinity against the others on kubernetes.io/hostname (what InterPodAffinity
   costs a Deployment spread one replica per node); then the LeastLoaded spread rows
   (by default at 1,000 nodes: adaptive percentageOfNodesToScore versus 100, which keeps pods per node
   within one; and what 100 costs at 5,000 nodes);
2. the extender (python -m scheduler extender's request path over loopback HTTP): per-request latency of
   filter and prioritize at each of --sizes nodes, in both nodeCacheCapable modes (benchmarks/extender.py),
   and the whole extender process's CPU per pod as kube-scheduler drives it, --pods pods filtered, prioritized
   and bound through the API test server (benchmarks/extender_process.py);
3. end to end through the in-repo API test server (labelled: it measures our client path, not a real server),
   --nodes fake nodes and --pods pending pods, `python -m scheduler` in its own process (its CPU ms, requests
   and watch bytes per bound pod reported beside the rate): the default plugin set, then LeastLoaded with
   adaptive sampling and with percentageOfNodesToScore 100;
4. with --kubeconfig, the same three runs through that API server;
5. with --kube-scheduler PATH and --kubeconfig, that kube-scheduler binary end to end through the same API
   server, alone and then asking our extender (benchmarks/kube_scheduler.py); without a binary the row says
   it was not measured.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from benchmarks import (
    cluster,
    endtoend,
    extender,
    extender_process,
    inprocess,
    kube_scheduler,
    report,
    testserver,
)

LEAST_LOADED = report.LEAST_LOADED
# (extra plugins, percentageOfNodesToScore) of each end-to-end run against one server: the default plugin set
# (throughput), then LeastLoaded with kube-scheduler's adaptive sampling and with every node scored (spread).
END_TO_END_RUNS: tuple[tuple[list[str], int | None], ...] = (([], None), ([LEAST_LOADED], None),
                                                               ([LEAST_LOADED], 100))


@dataclass
class Options:
    nodes: int = 500  # end to end (kube-scheduler's reference spread figure is for 2,000 pods on 500 nodes)
    pods: int = 2000  # end to end
    kubeconfig: Path | None = None
    json_path: Path | None = None
    in_process_only: bool = False
    test_server: bool = True
    qps: float = 0.0
    burst: int = 100
    sizes: tuple[int, ...] = (100, 1000, 5000)
    existing: int = 10_000
    decisions: int = 2000
    spread_rows: bool = True
    workload_rows: bool = True
    extender_rows: bool = True
    timeout: float = 120.0
    repeat: int = 1  # runs of each row; the median run is reported, every run's rate is kept
    kube_scheduler: Path | None = None  # a kube-scheduler binary to run end to end, alone and with the extender


def in_process_runs(options: Options) -> list[dict]:
    """The keyword arguments of every in-process row: the default plugin set at each size, pods with required
    anti-affinity at the largest, each scheduler_perf-style workload (cluster.WORKLOADS) beside the plain one
    at the end-to-end size (--nodes), then the LeastLoaded spread rows (adaptive sampling and
    percentageOfNodesToScore 100 at the second largest size, the cost of 100 at the largest)."""
    base = {"existing": options.existing, "pods": options.decisions}
    runs = [{"nodes": n, **base} for n in options.sizes]
    runs.append({"nodes": max(options.sizes), **base, "workload": "anti-affinity"})
    if options.workload_rows:  # each workload beside the plain one at the end-to-end size (issue 25)
        if options.nodes not in options.sizes:
            runs.append({"nodes": options.nodes, **base})
        runs += [{"nodes": options.nodes, **base, "workload": w} | _fitting(w, options.nodes, options.decisions)
                 for w in cluster.WORKLOADS if w not in ("plain", *END_TO_END_ONLY)]
    if options.spread_rows:
        sizes = sorted(set(options.sizes))
        middle, largest = sizes[-2] if len(sizes) > 1 else sizes[-1], sizes[-1]
        runs += [{"nodes": middle, **base, "plugins": [LEAST_LOADED]},
                 {"nodes": middle, **base, "plugins": [LEAST_LOADED], "percentage": 100}]
        if largest != middle:
            runs.append({"nodes": largest, **base, "plugins": [LEAST_LOADED], "percentage": 100})
    return runs


# In-process the scheduler has no API server to evict preemption victims through.
END_TO_END_ONLY = ("preemption",)


def _fitting(workload: str, nodes: int, pods: int) -> dict[str, int]:
    """Pods with required anti-affinity on the hostname fit one per node, and so does one preemptor per node
    (as scheduler_perf's PreemptionBasic): no more of them than nodes."""
    return {"pods": min(pods, nodes)} if workload in ("anti-affinity", "preemption") else {}


def run(options: Options, echo: Callable[[str], None] = print) -> dict:
    at_start = report.machine()
    errors: list[str] = []
    in_process = []
    for spec in in_process_runs(options):
        echo(f"in-process: {spec['nodes']:,} nodes, {spec['existing']:,} existing pods, "
             f"{spec['pods']:,} decisions, plugins {'+'.join(['default', *spec.get('plugins', [])])}"
             + (f", percentageOfNodesToScore {spec['percentage']}" if spec.get("percentage") else "")
             + inprocess.WORKLOAD_ROWS[spec.get("workload", "plain")])
        try:
            in_process.append(_median_of(options.repeat, "decisions_per_second",
                                         functools.partial(inprocess.run_in_subprocess, **spec)))
        except (RuntimeError, OSError, ValueError) as err:
            errors.append(str(err))
    extender_rows = []
    if options.extender_rows:
        for nodes in options.sizes:
            echo(f"extender: filter and prioritize at {nodes:,} nodes, {options.existing:,} existing pods, "
                 f"{extender.REQUESTS} requests each, both nodeCacheCapable modes")
            try:
                extender_rows += extender.run_size(nodes, extender.REQUESTS, existing=options.existing)
            except (RuntimeError, OSError) as err:
                errors.append(f"extender at {nodes:,} nodes: {err}")
            echo(f"extender process as kube-scheduler drives it: {nodes:,} nodes, {options.pods:,} pods through "
                 "the API test server")
            try:
                extender_rows.append(extender_process.report_row(
                    extender_process.run_once(inprocess.REPO, nodes, options.pods, options.timeout)))
            except (RuntimeError, OSError) as err:
                errors.append(f"extender process at {nodes:,} nodes: {err}")
    end_to_end = []
    if not options.in_process_only:
        servers: list[tuple[str, Path | None]] = []
        if options.test_server:
            servers.append((report.TEST_SERVER_LABEL, None))
        if options.kubeconfig is not None:
            servers.append((f"--kubeconfig {options.kubeconfig}", options.kubeconfig))
        workloads = [w for w in cluster.WORKLOADS if w != "plain"] if options.workload_rows else []
        runs = [(plugins, percentage, "plain") for plugins, percentage in END_TO_END_RUNS]
        runs += [([], None, workload) for workload in workloads]  # beside the plain default-plugin run
        for label, kubeconfig in servers:
            for plugins, percentage, workload in runs:
                echo(f"end to end through the {label}: {options.nodes} nodes, {options.pods} pods, "
                     f"plugins {'+'.join(['default', *plugins])}"
                     + (f", percentageOfNodesToScore {percentage}" if percentage else "")
                     + inprocess.WORKLOAD_ROWS[workload])
                try:
                    end_to_end.append(_median_of(options.repeat, "pods_per_second", functools.partial(
                        _end_to_end, options, label, kubeconfig, plugins, percentage, echo, workload)))
                except (endtoend.BenchmarkError, RuntimeError, OSError) as err:
                    errors.append(f"end to end through the {label}: {err}")
    kube_scheduler_rows = [] if options.in_process_only else kube_scheduler_runs(options, echo, errors)
    return report.build(in_process, end_to_end, errors, at_start, extender=extender_rows,
                        kube_scheduler=kube_scheduler_rows)


def kube_scheduler_runs(options: Options, echo: Callable[[str], None], errors: list[str]) -> list[dict]:
    """The kube-scheduler binary end to end, alone and then asking the extender, through --kubeconfig's API
    server (each run on objects of its own); or one row saying why it was not measured."""
    if options.kube_scheduler is None:
        return [{"not_measured": kube_scheduler.NOT_MEASURED}]
    if options.kubeconfig is None:
        return [{"not_measured": "not measured: --kube-scheduler needs --kubeconfig (a kube-apiserver; the in-repo "
                                 "test server serves only what our scheduler uses)"}]
    rows = []
    for with_extender in (False, True):
        echo(f"end to end with {options.kube_scheduler}{' asking the extender' if with_extender else ''}: "
             f"{options.nodes} nodes, {options.pods} pods")
        try:
            rows.append(endtoend.run(endtoend.EndToEndOptions(
                kubeconfig=options.kubeconfig, nodes=options.nodes, pods=options.pods, qps=options.qps,
                burst=options.burst, timeout=options.timeout, server_label=f"--kubeconfig {options.kubeconfig}",
                kube_scheduler=options.kube_scheduler, with_extender=with_extender), echo=echo))
        except (endtoend.BenchmarkError, RuntimeError, OSError) as err:
            errors.append(f"kube-scheduler{' with the extender' if with_extender else ''}: {err}")
    return rows


def _median_of(repeat: int, key: str, once: Callable[[], dict]) -> dict:
    """Run `repeat` times; the run with the median `key` (the lower middle one for an even count), with
    every run's figure under "runs" so the spread between runs is on record."""
    results = [once() for _ in range(max(repeat, 1))]
    if len(results) == 1:
        return results[0]
    ordered = sorted(results, key=lambda r: r.get(key) or 0)
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["runs"] = [r.get(key) for r in results]
    if "spread_within_one" in median:  # the spread is judged over every run, not the median one alone
        median["spread_within_one"] = all(r.get("spread_within_one") for r in results)
        median["runs_pods_per_node"] = [r.get("pods_per_node") for r in results]
    return median


def _end_to_end(options: Options, label: str, kubeconfig: Path | None, plugins: list[str],
                percentage: int | None, echo: Callable[[str], None], workload: str = "plain") -> dict:
    def once(path: Path) -> dict:
        pods = _fitting(workload, options.nodes, options.pods).get("pods", options.pods)
        return endtoend.run(endtoend.EndToEndOptions(
            kubeconfig=path, nodes=options.nodes, pods=pods, qps=options.qps, burst=options.burst,
            plugins=plugins, percentage=percentage, timeout=options.timeout, server_label=label,
            workload=workload), echo=echo)

    if kubeconfig is not None:
        return once(kubeconfig)
    with testserver.running_test_server() as path:  # a fresh server per run: no history carried over
        return once(path)


def run_and_report(options: Options, console: Console | None = None) -> int:
    """Run, print the tables, write the JSON; exit code 1 if some part could not run."""
    console = console or Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # a log file or pipe: do not fold the tables to 80 columns
    result = run(options, echo=lambda line: console.print(f"[dim]{line}[/]"))
    report.render(result, console)
    if options.json_path is not None:
        report.write_json(result, options.json_path)
        console.print(f"JSON written to {options.json_path}")
    return 1 if result["errors"] else 0


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes wants node counts like 100,1000,5000, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"--sizes wants positive node counts, got {text!r}")
    return sizes


def parse_args(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scheduler_bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500, help="end to end: fake nodes to create (default 500)")
    p.add_argument("--pods", type=int, default=2000, help="end to end: pending pods to create (default 2,000)")
    p.add_argument("--kubeconfig", type=Path, help="also run end to end through this API server")
    p.add_argument("--json", type=Path, dest="json_path", metavar="FILE", help="write the report as JSON here")
    p.add_argument("--in-process-only", action="store_true", help="skip the end-to-end runs")
    p.add_argument("--no-test-server", dest="test_server", action="store_false",
                   help="skip the run through the in-repo API test server")
    p.add_argument("--qps", type=float, default=0.0,
                   help="end to end: the scheduler's client qps (default 0 = unthrottled; kube-scheduler's is 50)")
    p.add_argument("--burst", type=int, default=100, help="end to end: client burst (default 100)")
    p.add_argument("--sizes", type=_sizes, default=(100, 1000, 5000),
                   help="in-process node counts (default 100,1000,5000)")
    p.add_argument("--existing", type=int, default=10_000, help="in-process: bound pods (default 10,000)")
    p.add_argument("--decisions", type=int, default=2000, help="in-process: pods decided per size (default 2,000)")
    p.add_argument("--no-spread-rows", dest="spread_rows", action="store_false",
                   help="skip the in-process LeastLoaded spread rows")
    p.add_argument("--no-workload-rows", dest="workload_rows", action="store_false",
                   help="skip the in-process and end-to-end rows of the workloads beside plain pods")
    p.add_argument("--no-extender-rows", dest="extender_rows", action="store_false",
                   help="skip the extender's per-request latency rows")
    p.add_argument("--timeout", type=float, default=120.0, help="end to end: seconds to wait for all bindings")
    p.add_argument("--kube-scheduler", type=Path, metavar="PATH",
                   help="a kube-scheduler binary: with --kubeconfig, run it end to end alone and asking the extender")
    p.add_argument("--repeat", type=int, default=1,
                   help="run every row this many times and report the median run (a busy machine varies)")
    args = p.parse_args(argv)
    for name in ("nodes", "pods", "existing", "decisions", "burst", "repeat"):
        if getattr(args, name) < (0 if name == "existing" else 1):
            p.error(f"--{name} must be positive")
    return Options(**vars(args))


def main(argv: list[str] | None = None) -> int:
    return run_and_report(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
