"""Run the placement scenarios against a cluster and judge them: `run(lab, options) -> RunReport`.

One run:
1. connect (kubeconfig, context), read the nodes and the scheduler's configuration (explain.py);
2. create a namespace of its own (generated name, session.py) and probe the scheduler with one plain pod
   (probe.py): a cluster without the scheduler gets one message saying so and how to deploy it, not timeouts;
3. each scenario: set the high-speed label as it asks, then the check for what it expects (checks.py):
   create its pods from templates/placement/, wait (bounded) for bindings or events, judge them (judge.py);
   a miss records the pods' events and, per node, the scheduler's filter reasons and scores for the pod;
4. undo everything on success, failure or Ctrl-C/SIGTERM (changes.py); --keep leaves the namespace, pods
   and labels for inspection (the scheduler's replicas are always restored).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.console import Echo
from labkit.kube import Kube, KubeError
from labkit.placement.checks import CHECKS, ScenarioResult
from labkit.placement.explain import SchedulerConfig, load_scheduler_config
from labkit.placement.judge import MISS, PASS
from labkit.placement.options import PlacementOptions
from labkit.placement.probe import probe
from labkit.placement.scenarios import Scenario
from labkit.placement.session import MANAGED_BY, Session

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


def run_scenario(session: Session, scenario: Scenario) -> ScenarioResult:
    """Set the scenario's label, run the check for what it expects, and with --wait-running wait for Running."""
    started = time.monotonic()
    session.set_high_speed_label(scenario.high_speed_label)
    result = CHECKS[scenario.expect.placement](session, scenario)
    if session.options.wait_running and result.verdict.verdict == PASS and any(p.node for p in result.pods):
        late = session.wait_running(result.pods)
        if late is not None:
            result.verdict = late
        result.pods = session.read_all([p.name for p in result.pods])
    result.seconds = time.monotonic() - started
    return result


def run_scenarios(session: Session, report: RunReport) -> None:
    scenarios = session.scenarios.selected(session.options.include_restart, session.options.only)
    session.create_namespace()
    report.namespace = session.namespace
    session.echo(f"namespace {session.namespace}")
    problem = probe(session)
    if problem:
        report.problem = problem
        return
    for scenario in scenarios:
        session.echo(f"scenario {scenario.id}: {scenario.title}")
        report.results.append(run_scenario(session, scenario))


def check_lab_against_cluster(lab: Lab, nodes: list[dict[str, Any]], config: SchedulerConfig) -> list[str]:
    """Lab settings the cluster contradicts: unknown high-speed nodes are errors, drift a warning."""
    names = {n["metadata"]["name"] for n in nodes}
    missing = [n for n in lab.placement.high_speed_nodes if n not in names]
    if missing:
        raise PlacementError(
            f"placement.high_speed_nodes names {', '.join(missing)}, which the cluster does not have "
            f"(nodes: {', '.join(sorted(names)) or 'none'}); set it to workers of this cluster")
    warnings = []
    if config.mode != lab.scheduler.mode:
        warnings.append(f"{config.source} is deployed in {config.mode} mode, but the lab definition says "
                        f"scheduler.mode: {lab.scheduler.mode}; run `./lab deploy-scheduler` to deploy that")
    args = config.network_aware_args(lab.scheduler.name)
    want = lab.scheduler.network_aware
    if args is None:
        warnings.append(f"{config.source}: NetworkAware is not enabled for {lab.scheduler.name}, so nothing "
                        "steers high-speed pods; redeploy with `./lab deploy-scheduler`")
    else:
        drift = [f"{field} {theirs!r} (lab: {ours!r})" for field, theirs, ours in (
            ("annotationKey", args.annotationKey, want.annotation_key),
            ("labelKey", args.labelKey, want.label_key),
            ("labelValue", args.labelValue, want.label_value)) if theirs != ours]
        if drift:
            warnings.append(f"the scheduler runs NetworkAware with {', '.join(drift)} from {config.source}: "
                            "the lab definition changed since it was deployed; run `./lab deploy-scheduler`")
    return warnings


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
    with contextlib.closing(Kube.from_kubeconfig(options.kubeconfig, options.context)) as kube:
        nodes = kube.nodes()
        config = load_scheduler_config(kube, lab, options.scheduler_config)
        report = RunReport(lab.name, kube.where, lab.scheduler.name, config_source=config.source,
                           mode=config.mode)
        report.warnings = check_lab_against_cluster(lab, nodes, config) + leftover_namespaces(kube)
        session = Session(lab, kube, config, options, echo)
        interrupted = False
        try:
            with sigterm_as_interrupt():
                run_scenarios(session, report)
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
            report.kept = [f"kubectl delete namespace {session.namespace}", *session.changes.label_undo_commands()]
        report.cleanup, problems = session.changes.undo(keep=keep)
        report.warnings.extend(problems)
    if echo is not None:
        for line in [*report.cleanup, *problems, *report.kept]:
            echo(f"cleanup: {line}")
