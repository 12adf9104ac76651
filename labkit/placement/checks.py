"""The scenario check: what one scenario of the generic vocabulary (scenarios.py) does on the cluster,
through the run's Session: skip when the scheduler lacks a required plugin, set the nodes, fill them when
asked, create the pods, wait as the expectation needs, judge each expected part (judge.py) and, on a miss,
explain a pod's placement node by node."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from labkit.kube import pod_path
from labkit.placement import judge
from labkit.placement.changes import deployment_path
from labkit.placement.explain import Explanation, explain_pod, read_cluster
from labkit.placement.judge import MISS, PASS, SKIP, PodState, Verdict
from labkit.placement.scenarios import Scenario
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


def eligibility(session: Session, scenario: Scenario) -> Explanation:
    """One of the scenario's pods explained before any is created: its fitting nodes are the eligible ones."""
    sample = session.scenario_pod(scenario, f"{scenario.id}-0")
    profile = session.config.profile(session.lab.scheduler.name)
    return explain_pod(sample, read_cluster(session.kube, watches=profile.watches), profile, session.config.source)


def check(session: Session, scenario: Scenario) -> ScenarioResult:
    """Run one scenario and judge it (its node changes are restored by the runner, which knows whether it is
    the last one)."""
    expect = scenario.expect
    expected = expect.describe()
    missing = session.config.missing_plugins(session.lab.scheduler.name, scenario.requires.plugins)
    if missing:
        return ScenarioResult(scenario, expected, Verdict(SKIP, f"{missing} ({session.config.source})"))
    session.apply_node_changes(scenario.nodes)
    session.create_objects(scenario)
    if expect.untouched is not None:
        return untouched(session, scenario, expected)
    if expect.none_bound is not None:
        return none_bound(session, scenario, expected)
    if expect.bound_all_or_none is not None:
        return all_or_none(session, scenario, expected)
    if expect.bound_after_restart is not None:
        return restart(session, scenario, expected)
    plain = eligibility(session, scenario)
    eligible = sorted(v.node for v in plain.nodes if v.fits)
    before = {v.node: v.pods for v in plain.nodes if v.fits}
    fillers: dict[str, str] = {}
    if scenario.fill is not None:
        filled = fill(session, scenario, eligible)
        if isinstance(filled, ScenarioResult):
            return filled
        fillers = filled
    names = session.create_pods(scenario, scenario.pods.total(len(eligible)))
    states = session.wait_decided(names) if expect.pending is not None else session.wait_bound(names)
    filler_states = session.read_all(list(fillers)) if fillers else []
    verdict = judge_parts(session, scenario, states, eligible, before, fillers, filler_states)
    result = ScenarioResult(scenario, expected, verdict, [*filler_states, *states])
    if not verdict.ok:
        pending = [s for s in states if s.node is None]
        result.explanation = session.explain((pending or states)[-1].name) if states else plain
    return result


def judge_parts(session: Session, scenario: Scenario, states: list[PodState], eligible: list[str],
                before: dict[str, int], fillers: dict[str, str], filler_states: list[PodState]) -> Verdict:
    """Each expected part in turn: the first miss is the verdict, else a pass giving every part's reason."""
    reasons = []
    for verdict in _parts(session, scenario, states, eligible, before, fillers, filler_states):
        if not verdict.ok:
            return verdict
        reasons.append(verdict.reason)
    return Verdict(PASS, "; ".join(reasons))


def _parts(session: Session, scenario: Scenario, states: list[PodState], eligible: list[str],
           before: dict[str, int], fillers: dict[str, str], filler_states: list[PodState]) -> Iterator[Verdict]:
    expect = scenario.expect
    if expect.pending is not None:
        yield judge.pending(states, expect.pending.count, expect.pending.reason, len(session.kube.nodes()))
    else:
        yield judge.all_bound(states) or Verdict(PASS, f"{len(states)} bound" if len(states) > 1 else "bound")
    if expect.bound is not None and expect.bound.nodes is not None:
        yield judge.bound_to(states, expect.bound.nodes.pick(session.kube.nodes()), str(expect.bound.nodes))
    if expect.spread is not None:
        counted = before if expect.spread.counting == "all" else None
        yield judge.spread(states, eligible, expect.spread.within, counted)
    if expect.preempted is not None:
        yield judge.preempted(fillers, filler_states, states, expect.preempted)


def fill(session: Session, scenario: Scenario, eligible: list[str]) -> dict[str, str] | ScenarioResult:
    """One pod per eligible node requesting its free cpu, at fill.priority (largest first, each bound before
    the next, so each lands where it was sized for); filler name -> node, or the miss when one is not bound."""
    assert scenario.fill is not None
    expected = scenario.expect.describe()
    nodes = read_cluster(session.kube).nodes
    free = sorted(((n.allocatable.milli_cpu - n.requested.milli_cpu, n.name) for n in nodes if n.name in eligible),
                  reverse=True)
    if not free:
        return ScenarioResult(scenario, expected, Verdict(MISS, "no node can take a pod of the scenario to fill"))
    priority_class = session.priority_class(scenario.fill.priority)
    fillers: dict[str, str] = {}
    for i, (milli_cpu, node) in enumerate(free, 1):
        (name,) = session.create_pods(scenario, 1, prefix=f"fill{i}-", priority_class=priority_class,
                                      cpu=f"{milli_cpu}m")
        (state,) = session.wait_bound([name])
        if state.node is None:
            return ScenarioResult(scenario, expected, Verdict(
                MISS, f"fill pod {name} ({milli_cpu}m cpu, sized for {node}) was not bound"), [state])
        fillers[name] = state.node
    return fillers


def untouched(session: Session, scenario: Scenario, expected: str) -> ScenarioResult:
    assert scenario.expect.untouched is not None
    names = session.create_pods(scenario, scenario.pods.total(0))
    seconds = scenario.expect.untouched.seconds
    # early only if something binds one
    session.wait(lambda: any(s.node for s in session.read_all(names, with_events=False)), seconds)
    states = session.read_all(names)
    return ScenarioResult(scenario, expected, judge.untouched(states, seconds), states)


SET_COMPLETION_SECONDS = 5.0  # at least this long for a half-bound set to be bound whole before it is judged


def none_bound(session: Session, scenario: Scenario, expected: str) -> ScenarioResult:
    assert scenario.expect.none_bound is not None
    names = session.create_pods(scenario, _count(session, scenario))
    seconds = scenario.expect.none_bound.seconds
    # early only if something binds one
    session.wait(lambda: any(s.node for s in session.read_all(names, with_events=False)), seconds)
    states = session.read_all(names)
    return ScenarioResult(scenario, expected, judge.none_bound(states, seconds), states)


def all_or_none(session: Session, scenario: Scenario, expected: str) -> ScenarioResult:
    """Wait until whole_sets sets are bound whole (every set when unset), watch the others settle_seconds more,
    and, as members of a gang are bound one by one, give a set caught half-bound a moment to complete."""
    spec = scenario.expect.bound_all_or_none
    assert spec is not None
    names = session.create_pods(scenario, _count(session, scenario))
    sets = session.pod_sets(scenario, names)
    want = len(sets) if spec.whole_sets is None else spec.whole_sets

    def by_set(with_events: bool = False) -> dict[str, list[PodState]]:
        states = {s.name: s for s in session.read_all(names, with_events=with_events)}
        return {name: [states[m] for m in members] for name, members in sets.items()}

    def whole(current: dict[str, list[PodState]]) -> int:
        return sum(1 for members in current.values() if all(s.node for s in members))

    def settled() -> bool:
        return not any(0 < sum(1 for s in members if s.node) < len(members) for members in by_set().values())

    session.wait(lambda: whole(by_set()) >= want, session.options.timeout)
    if whole(by_set()) < len(sets):
        time.sleep(spec.settle_seconds)  # the sets not bound must stay so: watched this long
    session.wait(settled, max(spec.settle_seconds, SET_COMPLETION_SECONDS))
    final = by_set(with_events=True)
    states = [s for members in final.values() for s in members]
    result = ScenarioResult(scenario, expected, judge.all_or_none(final, spec.whole_sets), states)
    if not result.verdict.ok:
        pending = [s for s in states if s.node is None]
        result.explanation = session.explain(pending[-1].name) if pending else None
    return result


def _count(session: Session, scenario: Scenario) -> int:
    """pods.count, or per_eligible_node x the nodes the scheduler's filters allow for one of the pods."""
    if scenario.pods.per_eligible_node is None:
        return scenario.pods.total(0)
    return scenario.pods.total(sum(1 for v in eligibility(session, scenario).nodes if v.fits))


def restart(session: Session, scenario: Scenario, expected: str) -> ScenarioResult:
    assert scenario.expect.bound_after_restart is not None
    s = session.lab.scheduler
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
    names = session.create_pods(scenario, 1)
    pending_s = scenario.expect.bound_after_restart.pending_seconds
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
