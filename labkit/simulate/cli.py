"""`./lab simulate`'s glue: read the inputs (refusing a bad one before anything runs), run the workload
through each profile, print the comparison (table or JSON), write the HTML page, explain a pod."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from labdef.lab import Lab
from labkit.simulate import engine, inputs
from labkit.simulate.report import print_report, report
from labkit.simulate.schema import SimulateInputError

DEFAULT_UNTIL = 3600.0


@dataclass
class SimulateOptions:
    workload: Path
    cluster: Path | None = None
    from_cluster: bool = False
    kubeconfig: Path | None = None
    context: str | None = None
    profiles: list[Path] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    until: float = DEFAULT_UNTIL
    seed: int = 0
    explain: str | None = None
    lab_profile: bool = True  # the lab's profile (or the default one) is a column too


def prepare(lab: Lab | None, options: SimulateOptions) -> tuple[Any, inputs.Workload, list[inputs.SimProfile]]:
    """Every input read and checked: the cluster, the workload, the profiles. Raises UserError subclasses."""
    if options.until <= 0:
        raise SimulateInputError(f"--until {options.until:g}: give the simulated seconds to stop at, more than 0")
    if (options.cluster is None) == (not options.from_cluster):
        raise SimulateInputError("give the cluster: --cluster FILE (Nodes and Pods, or node pools) or "
                                 "--from-cluster (the lab's, or --kubeconfig's; read once, never changed)")
    registry = inputs.base_registry(lab, options.plugins)
    profiles = [inputs.lab_profile(lab, registry)] if options.lab_profile or not options.profiles else []
    for path in options.profiles:
        profiles += inputs.file_profiles(path, registry)
    profiles = inputs.unique_labels(profiles)
    for profile in profiles:
        problems = profile.config.point_problems()
        if problems:
            raise SimulateInputError(f"profile {profile.label} cannot run on its own (simulate runs the scheduler "
                                     "standalone):\n" + "\n".join(f"  - {p}" for p in problems))
    if options.cluster is not None:
        cluster = inputs.cluster_from_file(options.cluster)
    else:
        cluster = _live_cluster(lab, options)
    if not cluster.nodes:
        raise SimulateInputError("the cluster has no nodes: nothing could be placed")
    workload = inputs.workload_from_file(options.workload, cluster.pending)
    return cluster, workload, profiles


def _live_cluster(lab: Lab | None, options: SimulateOptions) -> Any:
    from labkit.kube import Kube
    from labkit.placement.cli import default_kubeconfig

    if options.kubeconfig is None and lab is None:
        raise SimulateInputError("--from-cluster without a lab definition needs --kubeconfig FILE")
    kubeconfig = options.kubeconfig or default_kubeconfig(lab)
    with contextlib.closing(Kube.from_kubeconfig(kubeconfig, options.context)) as kube:
        return inputs.cluster_from_live(kube)


def _progress(label: str) -> engine.Progress | None:
    """A one-line progress bar on stderr, only when it is a terminal."""
    if not sys.stderr.isatty():
        return None
    last = [-1]

    def show(done: int, total: int) -> None:
        share = done * 40 // max(total, 1)
        if share != last[0]:
            last[0] = share
            sys.stderr.write(f"\r{label}: [{'#' * share}{'.' * (40 - share)}] {done}/{total} bound")
            sys.stderr.flush()
    return show


def execute(lab: Lab | None, options: SimulateOptions, out: Console, *, json_output: bool = False,
            html: Path | None = None) -> int:
    cluster, workload, profiles = prepare(lab, options)
    runs = []
    for profile in profiles:
        progress = _progress(profile.label)
        runs.append(engine.run_profile(profile, cluster, workload, until=options.until, seed=options.seed,
                                       explain=options.explain, progress=progress))
        if progress is not None:
            sys.stderr.write("\n")
    data = report(runs)
    if options.explain:
        data["explain"] = {r.profile.label: None if r.explanation is None else r.explanation.as_json() for r in runs}
    if html is not None:
        from labkit.simulate.html import write_html

        write_html(data, html)
    if json_output:
        if out.is_terminal:
            out.print_json(json.dumps(data))
        else:
            print(json.dumps(data, indent=1))
        return 0
    print_report(out, data)
    if options.explain:
        _print_explanations(out, options.explain, runs)
    if html is not None:
        out.print(f"report written to {html}")
    return 0


def _print_explanations(out: Console, pod: str, runs: list[engine.Run]) -> None:
    from labkit.placement.explain_view import print_explanation

    for run in runs:
        out.print(f"\n[bold]{run.profile.label}[/]: {pod}")
        if run.explanation is None:
            out.print(f"  {pod} was never decided in this run (no such workload pod, or it never left the queue)")
            continue
        print_explanation(out, run.explanation)
