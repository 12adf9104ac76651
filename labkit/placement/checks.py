"""The scenario checks, one per kind of expectation (`expect.placement` in scenarios.yaml): each creates the
scenario's pods through the run's Session, waits as the expectation needs, judges (judge.py) and, on a
miss, explains the pod's placement node by node. `CHECKS` maps each kind to its check."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from labkit.kube import pod_path
from labkit.placement import judge
from labkit.placement.changes import deployment_path
from labkit.placement.explain import Explanation, explain_pod, read_cluster
from labkit.placement.judge import MISS, SKIP, PodState, Verdict
from labkit.placement.scenarios import Placement, Scenario
from labkit.placement.session import Session


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


def labelled_node(session: Session, scenario: Scenario) -> ScenarioResult:
    expected = f"node with {session.label}"
    if not session.lab.placement.high_speed_nodes:
        return ScenarioResult(scenario, expected, Verdict(
            SKIP, "placement.high_speed_nodes is empty in the lab definition: name the workers to label"))
    names = session.create_pods(scenario, scenario.pods.count or 1)
    states = session.wait_bound(names)
    verdicts = [judge.labelled_node(s, session.lab.placement.high_speed_nodes, session.label) for s in states]
    miss = next((v for v in verdicts if not v.ok), None)
    result = ScenarioResult(scenario, expected, miss or verdicts[0], states)
    if miss:
        bad = next(s for s, v in zip(states, verdicts, strict=True) if not v.ok)
        result.explanation = session.explain(bad.name)
    return result


def eligibility(session: Session, scenario: Scenario) -> Explanation:
    """One of the scenario's pods explained before any is created: its fitting nodes are the eligible ones."""
    sample = session.scenario_pod(scenario, f"{scenario.id}-0")
    return explain_pod(sample, read_cluster(session.kube), session.config.profile(session.lab.scheduler.name),
                       session.config.source)


def spread(session: Session, scenario: Scenario) -> ScenarioResult:
    # The nodes the scheduler's filters allow for one of the batch's pods, and the pods already on them.
    plain = eligibility(session, scenario)
    eligible = [v.node for v in plain.nodes if v.fits]
    before = {v.node: v.pods for v in plain.nodes if v.fits}
    per_node = scenario.pods.per_eligible_node or 1
    expected = f"least-loaded, {len(eligible)} nodes"
    policy = session.config.least_loaded_args(session.lab.scheduler.name)
    if policy is None or (policy[0].mode, policy[0].strategy) != ("podCount", "LeastAllocated"):
        running = "not enabled" if policy is None else f"{policy[0].mode}/{policy[0].strategy}"
        return ScenarioResult(scenario, expected, Verdict(
            SKIP, f"the spread is judged by pod count: the scheduler's LeastLoaded is {running} "
                  f"({session.config.source}), not podCount/LeastAllocated"))
    if not eligible:
        return ScenarioResult(scenario, expected, judge.spread(before, {}, eligible), explanation=plain)
    names = session.create_pods(scenario, per_node * len(eligible))
    states = session.wait_bound(names)
    verdict = judge.spread(before, {s.name: s.node for s in states}, eligible)
    result = ScenarioResult(scenario, expected, verdict, states)
    if not verdict.ok:
        unbound = [s for s in states if s.node is None]
        result.explanation = session.explain((unbound or states)[-1].name)
    return result


def one_per_node(session: Session, scenario: Scenario) -> ScenarioResult:
    return _constrained_set(session, scenario, judge.one_per_node,
                            lambda nodes: f"one per node on {nodes}, {scenario.pods.extra} Pending")


def even_spread(session: Session, scenario: Scenario) -> ScenarioResult:
    return _constrained_set(session, scenario, judge.even_spread, lambda nodes: f"max-min <= 1 over {nodes} nodes")


def _constrained_set(session: Session, scenario: Scenario,
                     verdict_of: Callable[[list[PodState], list[str]], Verdict],
                     expected_on: Callable[[int], str]) -> ScenarioResult:
    """Create per_eligible_node x the eligible nodes + extra pods of a set constrained among itself, wait
    until each is bound or reported unschedulable, and judge; a miss explains a pending pod (else the last)."""
    plain = eligibility(session, scenario)
    eligible = sorted(v.node for v in plain.nodes if v.fits)
    expected = expected_on(len(eligible))
    if not eligible:
        return ScenarioResult(scenario, expected, verdict_of([], eligible), explanation=plain)
    per_node = scenario.pods.per_eligible_node or 1
    names = session.create_pods(scenario, per_node * len(eligible) + scenario.pods.extra)
    states = session.wait_decided(names)
    verdict = verdict_of(states, eligible)
    result = ScenarioResult(scenario, expected, verdict, states)
    if not verdict.ok:
        pending = [s for s in states if s.node is None]
        result.explanation = session.explain((pending or states)[-1].name)
    return result


def unschedulable(session: Session, scenario: Scenario) -> ScenarioResult:
    nodes = len(session.kube.nodes())
    names = session.create_pods(scenario, scenario.pods.count or 1)

    def reported() -> bool:
        state = session.read(names[0])
        cond = state.scheduled_condition
        return bool(state.node or (state.events_with("FailedScheduling") and cond and cond.get("status") == "False"))

    session.wait(reported, session.options.timeout)
    states = session.read_all(names)
    verdict = judge.unschedulable(states[0], nodes, session.label_key)
    result = ScenarioResult(scenario, "Pending, FailedScheduling", verdict, states)
    if not verdict.ok:
        result.explanation = session.explain(names[0])
    return result


def ignored(session: Session, scenario: Scenario) -> ScenarioResult:
    names = session.create_pods(scenario, scenario.pods.count or 1)
    seconds = scenario.expect.observe_seconds
    session.wait(lambda: session.read(names[0], with_events=False).node, seconds)  # early only if something binds it
    states = session.read_all(names)
    return ScenarioResult(scenario, "Pending, no events", judge.ignored(states[0], seconds), states)


def restart(session: Session, scenario: Scenario) -> ScenarioResult:
    s = session.lab.scheduler
    expected = "waits at 0 replicas, then bound"
    deployment = session.kube.get_or_none(deployment_path(s.namespace, s.name))
    if deployment is None:
        return ScenarioResult(scenario, expected, Verdict(
            SKIP, f"no Deployment {s.namespace}/{s.name} to scale (the scheduler runs outside the cluster)"))
    replicas = (deployment.get("spec") or {}).get("replicas", 1) or s.replicas
    selector = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    label_selector = ",".join(f"{k}={v}" for k, v in selector.items())
    session.changes.scale(s.namespace, s.name, 0, replicas)
    gone = session.wait(lambda: not session.kube.items(pod_path(s.namespace), labelSelector=label_selector),
                     session.options.timeout)
    if not gone:
        session.changes.restore_replicas()
        return ScenarioResult(scenario, expected, Verdict(
            MISS, f"scheduler pods still present {session.options.timeout:.0f} s after scaling to 0"))
    names = session.create_pods(scenario, scenario.pods.count or 1)
    pending_s = scenario.expect.pending_seconds
    session.wait(lambda: session.read(names[0], with_events=False).node, pending_s)
    at_zero = session.read(names[0])
    restored_at = time.monotonic()
    session.changes.restore_replicas()
    bound = session.wait(lambda: session.read(names[0], with_events=False).node, session.options.timeout)
    bind_s = time.monotonic() - restored_at if bound else None
    after = session.read(names[0])
    verdict = judge.bound_after_restart(at_zero, after, pending_s, bind_s, replicas)
    result = ScenarioResult(scenario, expected, verdict, [after])
    if not verdict.ok and after.node is None:
        result.explanation = session.explain(names[0])
    return result


LOW_PRIORITY, HIGH_PRIORITY = -10, 1000  # below the default 0, so the fillers are the cheapest victims


def preempts(session: Session, scenario: Scenario) -> ScenarioResult:
    """Fill every eligible worker's free cpu with one low-priority pod each (largest first, each bound before
    the next, so each lands where it was sized for), then create the high-priority pod."""
    expected = "one low-priority pod preempted, bound to its node"
    profile = session.config.profile(session.lab.scheduler.name)
    resolved = session.config.config.resolved_profiles()
    if not any(r.scheduler_name == profile.scheduler_name and r.post_filter is not None for r in resolved):
        return ScenarioResult(scenario, expected, Verdict(
            SKIP, f"DefaultPreemption is disabled in the scheduler's configuration ({session.config.source})"))
    nodes = read_cluster(session.kube).nodes
    eligible = {v.node for v in eligibility(session, scenario).nodes if v.fits}
    free = sorted(((n.allocatable.milli_cpu - n.requested.milli_cpu, n.name) for n in nodes if n.name in eligible),
                  reverse=True)
    if not free:
        return ScenarioResult(scenario, expected, Verdict(MISS, "no node can take a plain pod to preempt from"))
    low, high = f"{session.namespace}-low", f"{session.namespace}-high"
    session.changes.create_priority_class(low, LOW_PRIORITY)
    session.changes.create_priority_class(high, HIGH_PRIORITY)
    fillers: dict[str, str] = {}
    for i, (milli_cpu, node) in enumerate(free, 1):
        (name,) = session.create_pods(scenario, 1, prefix=f"low{i}-", priority_class=low, cpu=f"{milli_cpu}m")
        (state,) = session.wait_bound([name])
        if state.node is None:
            return ScenarioResult(scenario, expected, Verdict(
                MISS, f"low-priority {name} ({milli_cpu}m cpu, sized for {node}) was not bound"), [state])
        fillers[name] = state.node
    names = session.create_pods(scenario, 1, priority_class=high)
    session.wait_bound(names)
    states = session.read_all([*fillers, *names])
    verdict = judge.preempted(fillers, states[:-1], states[-1])
    result = ScenarioResult(scenario, expected, verdict, states)
    if not verdict.ok and states[-1].node is None:
        result.explanation = session.explain(names[0])
    return result


Check = Callable[[Session, Scenario], ScenarioResult]

CHECKS: dict[Placement, Check] = {
    "labelled-node": labelled_node,
    "least-loaded-spread": spread,
    "unschedulable": unschedulable,
    "ignored": ignored,
    "bound-after-restart": restart,
    "one-per-node": one_per_node,
    "even-spread": even_spread,
    "preempts": preempts,
}
