"""Run the placement scenarios against a cluster and judge them: `run(lab, options) -> RunReport`.

One run:
1. connect (kubeconfig, context), read the nodes and the scheduler's configuration (explain.py);
2. create a namespace of its own (generated name) and probe the scheduler with one plain pod: a
   cluster without the scheduler gets one message saying so and how to deploy it, not timeouts;
3. each scenario: set the high-speed label as it asks, create its pods from templates/placement/,
   wait (bounded) for bindings or events, judge them (judge.py); a miss records the pods' events and,
   per node, the scheduler's filter reasons and scores for the pod;
4. undo everything on success, failure or Ctrl-C/SIGTERM (changes.py); --keep leaves the namespace, pods
   and labels for inspection (the scheduler's replicas are always restored).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.lab import Lab
from labdef.render import render
from labkit.kube import Kube, KubeError, event_time, pod_path
from labkit.placement import judge
from labkit.placement.changes import Changes, deployment_path
from labkit.placement.explain import (
    ExplainError,
    Explanation,
    SchedulerConfig,
    explain_in_cluster,
    explain_pod,
    load_scheduler_config,
    snapshot,
)
from labkit.placement.judge import MISS, PASS, SKIP, PodState, Verdict
from labkit.placement.scenarios import SCENARIOS_FILE, PodDefaults, Scenario, ScenarioSet, load_scenarios

MANAGED_BY = {"app.kubernetes.io/managed-by": "kubelab-placement"}
SCENARIO_LABEL = "kubelab.io/placement-scenario"
NAMESPACE_PREFIX = "placement-"

EXIT_OK, EXIT_MISS, EXIT_ERROR, EXIT_NO_SCHEDULER = 0, 1, 2, 3

Echo = Callable[[str], None]


class PlacementError(RuntimeError):
    """The run cannot start (unreachable cluster, node names the cluster does not have, bad config)."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, treated like Ctrl-C: stop, clean up, exit."""


@dataclass
class Options:
    kubeconfig: Path
    context: str | None = None
    keep: bool = False
    wait_running: bool = False
    include_restart: bool = False
    timeout: float = 60.0  # seconds to wait for a binding, an event, or Running
    probe_seconds: float = 15.0  # how long the scheduler probe waits for a sign of life
    scheduler_config: Path | None = None
    only: list[str] | None = None
    scenarios_file: Path = SCENARIOS_FILE
    poll: float = 0.2
    label_settle_seconds: float = 1.0


@dataclass
class ScenarioResult:
    scenario: Scenario
    expected: str
    verdict: Verdict
    pods: list[PodState] = field(default_factory=list)
    seconds: float = 0.0
    explanation: Explanation | None = None

    @property
    def node_summary(self) -> str:
        nodes = [p.node or "-" for p in self.pods]
        if len(nodes) <= 1:
            return nodes[0] if nodes else "-"
        return ", ".join(f"{n} x{c}" for n, c in sorted(Counter(nodes).items()))  # k8s-worker-01 x2, ...

    @property
    def pod_summary(self) -> str:
        names = [p.name for p in self.pods]
        if len(names) <= 2:
            return ", ".join(names) or "-"
        return f"{names[0]}..{names[-1].rsplit('-', 1)[-1]}"  # spread-1..4


@dataclass
class RunReport:
    lab: str
    server: str
    scheduler: str
    namespace: str = ""
    config_source: str = ""
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


def render_pod(defaults: PodDefaults, name: str, namespace: str, scenario: str, annotations: dict[str, str],
               scheduler_name: str) -> dict[str, Any]:
    """One test pod from templates/placement/pod.yaml.j2."""
    text = render("placement/pod.yaml.j2", name=name, namespace=namespace,
                  labels={**MANAGED_BY, SCENARIO_LABEL: scenario}, annotations=annotations,
                  scheduler_name=scheduler_name, image=defaults.image, cpu=defaults.cpu, memory=defaults.memory)
    return yaml.safe_load(text)


def render_namespace() -> dict[str, Any]:
    return yaml.safe_load(render("placement/namespace.yaml.j2", prefix=NAMESPACE_PREFIX, labels=MANAGED_BY))


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


# -------------------------------------------------------------------------------------------- runner


class Runner:
    def __init__(self, lab: Lab, kube: Kube, config: SchedulerConfig, options: Options, echo: Echo) -> None:
        self.lab = lab
        self.kube = kube
        self.config = config
        self.options = options
        self.echo = echo
        self.changes = Changes(kube)
        self.namespace = ""
        self.scenarios: ScenarioSet = load_scenarios(options.scenarios_file)
        s = lab.scheduler.network_aware
        self.label_key, self.label_value, self.annotation_key = s.label_key, s.label_value, s.annotation_key

    # --------------------------------------------------------------------------------------- helpers

    @property
    def label(self) -> str:
        return f"{self.label_key}={self.label_value}"

    def wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Poll until predicate() is truthy or the timeout passes; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(self.options.poll)

    def pod_manifest(self, name: str, scenario: str, *, high_speed: bool, scheduler_name: str) -> dict[str, Any]:
        annotations = {self.annotation_key: self.label_value} if high_speed else {}
        return render_pod(self.scenarios.pod, name, self.namespace, scenario, annotations, scheduler_name)

    def scenario_pod(self, scenario: Scenario, name: str) -> dict[str, Any]:
        """A pod as the scenario's `pods` asks: the high-speed annotation, the lab's or an unserved scheduler."""
        unserved = f"nobody-{self.namespace}"  # unique per run, so no scheduler can be serving it
        return self.pod_manifest(name, scenario.id, high_speed=scenario.pods.network is not None,
                                 scheduler_name=unserved if scenario.pods.scheduler == "unserved"
                                 else self.lab.scheduler.name)

    def create_pods(self, scenario: Scenario, count: int) -> list[str]:
        names = [f"{scenario.id}-{i}" for i in range(1, count + 1)]
        for name in names:
            self.kube.create(pod_path(self.namespace), self.scenario_pod(scenario, name))
        return names

    def read(self, name: str, with_events: bool = True) -> PodState:
        obj = self.kube.pod(self.namespace, name)
        if obj is None:
            return PodState(name, None, "Deleted")
        events = self.kube.pod_events(self.namespace, name, obj["metadata"].get("uid", "")) if with_events else []
        return PodState.from_api(obj, events)

    def read_all(self, names: list[str], with_events: bool = True) -> list[PodState]:
        """Several pods with one list call (and one for their events), in the order of `names`."""
        pods = {p["metadata"]["name"]: p for p in self.kube.items(pod_path(self.namespace))}
        events: dict[str, list[dict[str, Any]]] = {}
        if with_events:
            for event in sorted(self.kube.items(f"/api/v1/namespaces/{self.namespace}/events"), key=event_time):
                events.setdefault((event.get("involvedObject") or {}).get("name", ""), []).append(event)
        return [PodState.from_api(pods[n], events.get(n, [])) if n in pods else PodState(n, None, "Deleted")
                for n in names]

    def wait_bound(self, names: list[str]) -> list[PodState]:
        def all_bound() -> list[PodState] | None:
            states = self.read_all(names, with_events=False)
            return states if all(s.node for s in states) else None

        self.wait(all_bound, self.options.timeout)
        return self.read_all(names)

    def wait_running(self, states: list[PodState]) -> Verdict | None:
        """--wait-running: every bound pod must reach Running; None when they all do."""
        names = [s.name for s in states if s.node]

        def running() -> bool:
            return all(s.phase == "Running" for s in self.read_all(names, with_events=False))

        if self.wait(running, self.options.timeout):
            return None
        late = [s for s in self.read_all(names) if s.phase != "Running"]
        detail = "; ".join(f"{s.name} on {s.node} is {s.phase or 'unknown'}"
                           + (f" ({s.events[-1]})" if s.events else "") for s in late[:3])
        return Verdict(MISS, f"bound but not Running within {self.options.timeout:.0f} s: {detail}")

    def explain(self, name: str) -> Explanation | None:
        try:
            return explain_in_cluster(self.kube, self.namespace, name, self.config, self.lab.scheduler.name)
        except (KubeError, ExplainError) as err:
            return Explanation(f"{self.namespace}/{name}", self.config.source, [], f"cannot explain: {err}")

    # ---------------------------------------------------------------------------------------- labels

    def nodes_by_name(self) -> dict[str, dict[str, Any]]:
        return {n["metadata"]["name"]: n for n in self.kube.nodes()}

    def set_high_speed_label(self, wanted: str) -> None:
        """The scenario's high_speed_label: applied, removed, or untouched."""
        if wanted == "applied":
            self.apply_high_speed_label()
        elif wanted == "removed":
            self.remove_high_speed_label()

    def apply_high_speed_label(self) -> None:
        nodes = self.nodes_by_name()
        for name in self.lab.placement.high_speed_nodes:
            labels = nodes[name]["metadata"].get("labels") or {}
            self.changes.set_label(name, self.label_key, self.label_value, labels.get(self.label_key))

    def remove_high_speed_label(self) -> None:
        removed = False
        for name, node in self.nodes_by_name().items():
            labels = node["metadata"].get("labels") or {}
            if labels.get(self.label_key) == self.label_value:
                self.changes.set_label(name, self.label_key, None, labels[self.label_key])
                removed = True
        if removed:
            # The scheduler sees node and pod changes on separate watches: give the node change a head
            # start, or a pod created at once may be placed by a cache that still has the label.
            time.sleep(self.options.label_settle_seconds)

    # ------------------------------------------------------------------------------------- preflight

    def probe(self) -> str | None:
        """None when the scheduler shows a sign of life (binds a plain pod or reports on it), else why not."""
        name = "probe"
        body = self.pod_manifest(name, "probe", high_speed=False, scheduler_name=self.lab.scheduler.name)
        self.kube.create(pod_path(self.namespace), body)

        def alive() -> bool:
            state = self.read(name)
            return bool(state.node or state.events)

        started = time.monotonic()
        ok = self.wait(alive, self.options.probe_seconds)
        self.kube.delete(pod_path(self.namespace, name), grace_seconds=0)
        if ok:
            self.echo(f"scheduler {self.lab.scheduler.name} answered a probe pod in {time.monotonic() - started:.1f} s")
            return None
        return self.no_scheduler_message()

    def no_scheduler_message(self) -> str:
        s = self.lab.scheduler
        facts = []
        deployment = self.kube.get_or_none(deployment_path(s.namespace, s.name))
        if deployment is None:
            facts.append(f"there is no Deployment {s.namespace}/{s.name}")
        else:
            want = (deployment.get("spec") or {}).get("replicas", 1)
            ready = (deployment.get("status") or {}).get("readyReplicas") or 0
            if want == 0:
                facts.append(f"Deployment {s.namespace}/{s.name} is scaled to 0 (an interrupted run?): "
                             f"`kubectl -n {s.namespace} scale deployment/{s.name} --replicas={s.replicas}`")
            else:
                facts.append(f"Deployment {s.namespace}/{s.name} has {ready}/{want} ready replicas: see "
                             f"`kubectl -n {s.namespace} describe deployment/{s.name}` and "
                             f"`kubectl -n {s.namespace} logs deployment/{s.name}`")
        facts.append(self.lease_fact())
        probe = f"a probe pod naming schedulerName {s.name} got no binding and no event within {self.options.probe_seconds:.0f} s"
        how = ("Deploy it with `./lab deploy-scheduler`, or run it beside the cluster with "
               "`python -m scheduler --config FILE --kubeconfig FILE`, then run test-placement again.")
        return f"The scheduler {s.name} is not running in this cluster: {'; '.join(facts)}; {probe}. {how}"

    def lease_fact(self) -> str:
        config = self.config.config
        if not config.leaderElection.leaderElect:
            return "its configuration has leader election off, so there is no Lease to check"
        ns, name = config.leaderElection.resourceNamespace, config.lease_name
        lease = self.kube.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        if lease is None:
            return f"no leader Lease {ns}/{name} exists (no instance ever led)"
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or "nobody"
        return f"the leader Lease {ns}/{name} is held by {holder} (last renewed {spec.get('renewTime') or 'never'})"

    # ------------------------------------------------------------------------------------- scenarios

    def run_scenario(self, scenario: Scenario) -> ScenarioResult:
        started = time.monotonic()
        handler = {
            "labelled-node": self.labelled_node,
            "least-loaded-spread": self.spread,
            "unschedulable": self.unschedulable,
            "ignored": self.ignored,
            "bound-after-restart": self.restart,
        }[scenario.expect.placement]
        self.set_high_speed_label(scenario.high_speed_label)
        result = handler(scenario)
        if self.options.wait_running and result.verdict.verdict == PASS and any(p.node for p in result.pods):
            late = self.wait_running(result.pods)
            if late is not None:
                result.verdict = late
            result.pods = self.read_all([p.name for p in result.pods])
        result.seconds = time.monotonic() - started
        return result

    def labelled_node(self, scenario: Scenario) -> ScenarioResult:
        expected = f"node with {self.label}"
        if not self.lab.placement.high_speed_nodes:
            return ScenarioResult(scenario, expected, Verdict(
                SKIP, "placement.high_speed_nodes is empty in the lab definition: name the workers to label"))
        names = self.create_pods(scenario, scenario.pods.count or 1)
        states = self.wait_bound(names)
        verdicts = [judge.labelled_node(s, self.lab.placement.high_speed_nodes, self.label) for s in states]
        miss = next((v for v in verdicts if not v.ok), None)
        result = ScenarioResult(scenario, expected, miss or verdicts[0], states)
        if miss:
            bad = next(s for s, v in zip(states, verdicts, strict=True) if not v.ok)
            result.explanation = self.explain(bad.name)
        return result

    def spread(self, scenario: Scenario) -> ScenarioResult:
        # The nodes the scheduler's filters allow for one of the batch's pods, and the pods already on them.
        sample = self.scenario_pod(scenario, f"{scenario.id}-0")
        nodes = snapshot(self.kube.nodes(), self.kube.live_pods())
        plain = explain_pod(sample, nodes, self.config.profile(self.lab.scheduler.name), self.config.source)
        eligible = [v.node for v in plain.nodes if v.fits]
        before = {v.node: v.pods for v in plain.nodes if v.fits}
        per_node = scenario.pods.per_eligible_node or 1
        expected = f"least-loaded, {len(eligible)} nodes"
        policy = self.config.least_loaded_args(self.lab.scheduler.name)
        if policy is None or (policy[0].mode, policy[0].strategy) != ("podCount", "LeastAllocated"):
            running = "not enabled" if policy is None else f"{policy[0].mode}/{policy[0].strategy}"
            return ScenarioResult(scenario, expected, Verdict(
                SKIP, f"the spread is judged by pod count: the scheduler's LeastLoaded is {running} "
                      f"({self.config.source}), not podCount/LeastAllocated"))
        if not eligible:
            return ScenarioResult(scenario, expected, judge.spread(before, {}, eligible), explanation=plain)
        names = self.create_pods(scenario, per_node * len(eligible))
        states = self.wait_bound(names)
        verdict = judge.spread(before, {s.name: s.node for s in states}, eligible)
        result = ScenarioResult(scenario, expected, verdict, states)
        if not verdict.ok:
            unbound = [s for s in states if s.node is None]
            result.explanation = self.explain((unbound or states)[-1].name)
        return result

    def unschedulable(self, scenario: Scenario) -> ScenarioResult:
        nodes = len(self.kube.nodes())
        names = self.create_pods(scenario, scenario.pods.count or 1)

        def reported() -> bool:
            state = self.read(names[0])
            cond = state.scheduled_condition
            return bool(state.node or (state.events_with("FailedScheduling") and cond and cond.get("status") == "False"))

        self.wait(reported, self.options.timeout)
        states = self.read_all(names)
        verdict = judge.unschedulable(states[0], nodes, self.label_key)
        result = ScenarioResult(scenario, "Pending, FailedScheduling", verdict, states)
        if not verdict.ok:
            result.explanation = self.explain(names[0])
        return result

    def ignored(self, scenario: Scenario) -> ScenarioResult:
        names = self.create_pods(scenario, scenario.pods.count or 1)
        seconds = scenario.expect.observe_seconds
        self.wait(lambda: self.read(names[0], with_events=False).node, seconds)  # early only if something binds it
        states = self.read_all(names)
        return ScenarioResult(scenario, "Pending, no events", judge.ignored(states[0], seconds), states)

    def restart(self, scenario: Scenario) -> ScenarioResult:
        s = self.lab.scheduler
        expected = "waits at 0 replicas, then bound"
        deployment = self.kube.get_or_none(deployment_path(s.namespace, s.name))
        if deployment is None:
            return ScenarioResult(scenario, expected, Verdict(
                SKIP, f"no Deployment {s.namespace}/{s.name} to scale (the scheduler runs outside the cluster)"))
        replicas = (deployment.get("spec") or {}).get("replicas", 1) or s.replicas
        selector = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        label_selector = ",".join(f"{k}={v}" for k, v in selector.items())
        self.changes.scale(s.namespace, s.name, 0, replicas)
        gone = self.wait(lambda: not self.kube.items(pod_path(s.namespace), labelSelector=label_selector),
                         self.options.timeout)
        if not gone:
            self.changes.restore_replicas()
            return ScenarioResult(scenario, expected, Verdict(
                MISS, f"scheduler pods still present {self.options.timeout:.0f} s after scaling to 0"))
        names = self.create_pods(scenario, scenario.pods.count or 1)
        pending_s = scenario.expect.pending_seconds
        self.wait(lambda: self.read(names[0], with_events=False).node, pending_s)
        at_zero = self.read(names[0])
        restored_at = time.monotonic()
        self.changes.restore_replicas()
        bound = self.wait(lambda: self.read(names[0], with_events=False).node, self.options.timeout)
        bind_s = time.monotonic() - restored_at if bound else None
        after = self.read(names[0])
        verdict = judge.bound_after_restart(at_zero, after, pending_s, bind_s, replicas)
        result = ScenarioResult(scenario, expected, verdict, [after])
        if not verdict.ok and after.node is None:
            result.explanation = self.explain(names[0])
        return result

    # ------------------------------------------------------------------------------------------- run

    def create_namespace(self) -> str:
        created = self.kube.create("/api/v1/namespaces", render_namespace())
        self.namespace = created["metadata"]["name"]
        self.changes.namespace = self.namespace
        self.ensure_default_service_account()
        return self.namespace

    def ensure_default_service_account(self) -> None:
        """Pod admission refuses pods until the namespace's `default` ServiceAccount exists; the
        controller-manager creates it a moment after the namespace (never, on an API server without one),
        so create it ourselves. AlreadyExists means the controller was first; NotFound, that this API
        server does not serve ServiceAccounts (and so does not require them)."""
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        try:
            self.kube.create(f"/api/v1/namespaces/{self.namespace}/serviceaccounts", body)
        except KubeError as err:
            if err.status not in (404, 409):
                raise

    def run(self, report: RunReport) -> None:
        scenarios = self.scenarios.selected(self.options.include_restart, self.options.only)
        self.create_namespace()
        report.namespace = self.namespace
        self.echo(f"namespace {self.namespace}")
        problem = self.probe()
        if problem:
            report.problem = problem
            return
        for scenario in scenarios:
            self.echo(f"scenario {scenario.id}: {scenario.title}")
            report.results.append(self.run_scenario(scenario))


def check_lab_against_cluster(lab: Lab, nodes: list[dict[str, Any]], config: SchedulerConfig) -> list[str]:
    """Lab settings the cluster contradicts: unknown high-speed nodes are errors, drift a warning."""
    names = {n["metadata"]["name"] for n in nodes}
    missing = [n for n in lab.placement.high_speed_nodes if n not in names]
    if missing:
        raise PlacementError(
            f"placement.high_speed_nodes names {', '.join(missing)}, which the cluster does not have "
            f"(nodes: {', '.join(sorted(names)) or 'none'}); set it to workers of this cluster")
    warnings = []
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


def run(lab: Lab, options: Options, echo: Echo = lambda _line: None) -> RunReport:
    """Run the selected scenarios and return the report. Raises PlacementError when nothing can run,
    KeyboardInterrupt (after cleaning up) when interrupted."""
    started = time.monotonic()
    with contextlib.closing(Kube.from_kubeconfig(options.kubeconfig, options.context)) as kube:
        try:
            nodes = kube.nodes()
            config = load_scheduler_config(kube, lab, options.scheduler_config)
        except (KubeError, ExplainError) as err:
            raise PlacementError(str(err)) from None
        report = RunReport(lab.name, kube.where, lab.scheduler.name, config_source=config.source)
        report.warnings = check_lab_against_cluster(lab, nodes, config) + leftover_namespaces(kube)
        runner = Runner(lab, kube, config, options, echo)
        interrupted = False
        try:
            with sigterm_as_interrupt():
                runner.run(report)
        except KeyboardInterrupt:
            interrupted = True
            raise
        except KubeError as err:
            report.problem = f"the run stopped on an API error: {err}"
            report.problem_exit = EXIT_ERROR
        finally:
            undo(runner, report, options.keep, echo if interrupted else None)
            report.seconds = time.monotonic() - started
        return report


def undo(runner: Runner, report: RunReport, keep: bool, echo: Echo | None) -> None:
    """Undo the run's changes (uninterruptibly) into the report; `echo` them too when no report will be
    printed (an interrupted run)."""
    with uninterruptible():
        if keep and runner.namespace:
            report.kept = [f"kubectl delete namespace {runner.namespace}", *runner.changes.label_undo_commands()]
        report.cleanup, problems = runner.changes.undo(keep=keep)
        report.warnings.extend(problems)
    if echo is not None:
        for line in [*report.cleanup, *problems, *report.kept]:
            echo(f"cleanup: {line}")
