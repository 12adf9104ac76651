"""Run the placement scenarios against a cluster and judge them: `run(lab, options) -> RunReport`.

One run:
1. connect (kubeconfig, context), read the nodes and the scheduler's configuration (explain.py);
2. create a namespace of its own (generated name, session.py) and probe the scheduler with one plain pod
   (probe.py): a cluster without the scheduler gets one message saying so and how to deploy it, not timeouts;
3. each scenario (the scenario files: scenarios.py): set its nodes as it asks, create its objects, its pods from
   templates/placement/ with its patch, wait (bounded) for bindings or events, judge them (checks.py,
   judge.py); a miss records the pods' events and, per node, the scheduler's filter reasons and scores for
   the pod; then delete its pods and objects and restore its nodes before the next;
4. undo everything on success, failure or Ctrl-C/SIGTERM (changes.py); --keep leaves the namespace and the
   last scenario's pods and node changes for inspection (the scheduler's replicas are always restored).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labdef.errors import UserError
from labdef.lab import Lab, missing_files
from labkit import lab_plugins
from labkit.console import Echo
from labkit.kube import Kube, KubeError
from labkit.placement.checks import ScenarioResult, check
from labkit.placement.explain import ExplainError, SchedulerConfig, load_scheduler_config, rendered_config
from labkit.placement.judge import MISS, PASS
from labkit.placement.options import PlacementOptions
from labkit.placement.probe import probe
from labkit.placement.scenarios import (
    DRA_SCENARIOS_FILE,
    SCENARIOS_FILE,
    Scenario,
    ScenarioSet,
    load_scenarios,
)
from labkit.placement.session import MANAGED_BY, Session, served_kind
from scheduler.framework import Registry

EXIT_OK, EXIT_MISS, EXIT_ERROR, EXIT_NO_SCHEDULER = 0, 1, 2, 3


class PlacementError(UserError):
    """The run cannot start (unreachable cluster, node names the cluster does not have, bad config)."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, treated like Ctrl-C: stop, clean up, exit."""


@dataclass
class RunReport:
    lab: str
    server: str
    scheduler: str
    namespace: str = ""
    config_source: str = ""
    mode: str = "standalone"  # as deployed: "extender" is kube-scheduler asking our extender
    results: list[ScenarioResult] = field(default_factory=list)
    problem: str | None = None  # the run could not judge anything (scheduler missing, API error)
    problem_exit: int = EXIT_NO_SCHEDULER
    warnings: list[str] = field(default_factory=list)
    cleanup: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # --keep: what is left and how to remove it
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.problem:
            return self.problem_exit
        return EXIT_MISS if any(r.verdict.verdict == MISS for r in self.results) else EXIT_OK


# ------------------------------------------------------------------------------------------- signals


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises Interrupted (like Ctrl-C) so `finally` blocks clean up; main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Cleanup must finish: a second Ctrl-C while undoing is ignored (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


# ------------------------------------------------------------------------------------------- run


def scenario_files(lab: Lab, options: PlacementOptions) -> list[Path]:
    """--scenarios FILE (repeatable) if given, else the built-in file (and in a DRA lab the DRA scenarios) and
    the lab's placement.scenarios."""
    if options.scenarios_files:
        return list(options.scenarios_files)
    missing = missing_files(lab)
    if missing:
        raise PlacementError("the lab definition names files that are not there:\n" + "\n".join(missing))
    builtin = [SCENARIOS_FILE] if lab.placement.builtin_scenarios else []
    if lab.placement.builtin_scenarios and lab.dra.example_driver:
        builtin.append(DRA_SCENARIOS_FILE)
    return builtin + [lab.path(p) for p in lab.placement.scenarios]


def run_scenario(session: Session, scenario: Scenario) -> ScenarioResult:
    """The scenario's check, and with --wait-running a wait for its bound pods to be Running."""
    started = time.monotonic()
    result = check(session, scenario)
    if session.options.wait_running and result.verdict.verdict == PASS and any(p.node for p in result.pods):
        late = session.wait_running(result.pods)
        if late is not None:
            result.verdict = late
        result.pods = session.read_all([p.name for p in result.pods])
    result.seconds = time.monotonic() - started
    return result


def run_scenarios(session: Session, scenarios: list[Scenario], report: RunReport) -> None:
    session.create_namespace()
    report.namespace = session.namespace
    session.echo(f"namespace {session.namespace}")
    problem = probe(session)
    if problem:
        report.problem = problem
        return
    for i, scenario in enumerate(scenarios):
        session.echo(f"scenario {scenario.id}: {scenario.title}")
        report.results.append(run_scenario(session, scenario))
        if i < len(scenarios) - 1:  # the last one's state is the run's undo's (--keep leaves it)
            restored = session.end_scenario()
            if restored:
                session.echo(f"restored {'; '.join(restored)}")


def check_selectors(scenarios: list[Scenario], nodes: list[dict[str, Any]]) -> None:
    """Every node a scenario names by name or role is in this cluster: refused before anything changes."""
    names = ", ".join(sorted(n["metadata"]["name"] for n in nodes)) or "none"
    for scenario in scenarios:
        for i, change in enumerate(scenario.nodes):
            if change.select.labels is None and not change.select.pick(nodes):
                raise PlacementError(f"{scenario.source}: scenario {scenario.id!r}: nodes[{i}].select: "
                                     f"{change.select} matches no node of this cluster (nodes: {names})")


def check_objects(scenarios: list[Scenario], kube: Kube) -> None:
    """Every kind a scenario's objects name is served by this cluster: refused before anything changes."""
    for scenario in scenarios:
        for i, obj in enumerate(scenario.objects):
            if served_kind(kube, obj["apiVersion"], obj["kind"]) is None:
                raise PlacementError(
                    f"{scenario.source}: scenario {scenario.id!r}: objects[{i}]: this cluster does not serve kind "
                    f"{obj['kind']} ({obj['apiVersion']}); install its CustomResourceDefinition first (deploy-scheduler "
                    "applies the crds/ of the lab's plugin folders), or fix apiVersion and kind")


def check_lab_against_cluster(lab: Lab, config: SchedulerConfig, plugins: Registry) -> list[str]:
    """What the deployed scheduler runs that the lab definition would not: a warning saying to redeploy."""
    warnings = []
    if config.mode != lab.scheduler.mode:
        warnings.append(f"{config.source} is deployed in {config.mode} mode, but the lab definition says "
                        f"scheduler.mode: {lab.scheduler.mode}; run `./lab deploy-scheduler` to deploy that")
        return warnings
    if config.source == rendered_config(lab, plugins).source:
        return warnings
    try:
        drift = plugin_drift(config.plugins(lab.scheduler.name),
                             rendered_config(lab, plugins).plugins(lab.scheduler.name))
    except ExplainError:
        return warnings  # the deployed profile is not the lab's scheduler's: the run says so itself
    if drift:
        warnings.append(f"{config.source} differs from the lab definition: {'; '.join(drift)}: the lab definition "
                        "changed since it was deployed; run `./lab deploy-scheduler`")
    return warnings


def plugin_drift(deployed: dict[str, dict[str, Any]], lab: dict[str, dict[str, Any]]) -> list[str]:
    """Each plugin enabled on one side only, or run with other args or weight, in the deployed order."""
    drift = []
    for name in [*deployed, *(n for n in lab if n not in deployed)]:
        if name not in lab:
            drift.append(f"it enables {name}, the lab does not")
        elif name not in deployed:
            drift.append(f"it does not enable {name}, the lab does")
        else:
            theirs, ours = deployed[name], lab[name]
            changed = [f"{k} {theirs['args'].get(k)!r} (lab: {ours['args'].get(k)!r})"
                       for k in [*theirs["args"], *(k for k in ours["args"] if k not in theirs["args"])]
                       if theirs["args"].get(k) != ours["args"].get(k)]
            if theirs.get("weight") != ours.get("weight"):
                changed.append(f"weight {theirs.get('weight')} (lab: {ours.get('weight')})")
            if changed:
                drift.append(f"it runs {name} with {', '.join(changed)}")
    return drift


def leftover_namespaces(kube: Kube) -> list[str]:
    """Namespaces of earlier runs (--keep, or a killed run): their pods still count on the nodes."""
    selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
    names = sorted(n["metadata"]["name"] for n in kube.items("/api/v1/namespaces", labelSelector=selector)
                   if not (n.get("metadata") or {}).get("deletionTimestamp"))
    if not names:
        return []
    return [(f"namespaces left by earlier runs: {', '.join(names)} (their pods count on the nodes); remove them "
            f"with `kubectl delete namespace -l {selector}`")]


def run(lab: Lab, options: PlacementOptions, echo: Echo = lambda _line: None) -> RunReport:
    """Run the selected scenarios and return the report. Raises PlacementError when nothing can run,
    KeyboardInterrupt (after cleaning up) when interrupted."""
    started = time.monotonic()
    scenario_set: ScenarioSet = load_scenarios(scenario_files(lab, options))  # a bad file changes nothing
    scenarios = scenario_set.selected(options.include_restart, options.only)
    plugins = lab_plugins.registry(lab)  # the deployed configuration names the lab's plugins
    with contextlib.closing(Kube.from_kubeconfig(options.kubeconfig, options.context)) as kube:
        nodes = kube.nodes()
        check_selectors(scenarios, nodes)
        check_objects(scenarios, kube)
        config = load_scheduler_config(kube, lab, options.scheduler_config, plugins)
        report = RunReport(lab.name, kube.where, lab.scheduler.name, config_source=config.source,
                           mode=config.mode)
        report.warnings = check_lab_against_cluster(lab, config, plugins) + leftover_namespaces(kube)
        session = Session(lab, kube, config, options, echo, scenario_set.pod)
        interrupted = False
        try:
            with sigterm_as_interrupt():
                run_scenarios(session, scenarios, report)
        except KeyboardInterrupt:
            interrupted = True
            raise
        except KubeError as err:
            report.problem = f"the run stopped on an API error: {err}"
            report.problem_exit = EXIT_ERROR
        finally:
            undo(session, report, options.keep, echo if interrupted else None)
            report.seconds = time.monotonic() - started
        return report


def undo(session: Session, report: RunReport, keep: bool, echo: Echo | None) -> None:
    """Undo the run's changes (uninterruptibly) into the report; `echo` them too when no report will be
    printed (an interrupted run)."""
    with uninterruptible():
        if keep and session.namespace:
            report.kept = [f"kubectl delete namespace {session.namespace}", *session.changes.object_undo_commands(),
                           *session.changes.node_undo_commands()]
        report.cleanup, problems = session.changes.undo(keep=keep)
        report.warnings.extend(problems)
    if echo is not None:
        for line in [*report.cleanup, *problems, *report.kept]:
            echo(f"cleanup: {line}")
