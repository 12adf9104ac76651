"""One profile's run of a workload: ``scheduler.testing.Cycles`` (the real framework: every extension point,
preemption with its victims deleted, the profile's plugins) on a simulated clock that jumps from one thing
to the next: a pod arriving, a pod finishing (its room freed), a backoff ending, a Permit wait timing out.
``until`` bounds simulated time, so a workload that cannot finish ends there with what is still pending.

What it records for the report: when each pod arrived and was bound (and where), the last FailedScheduling
message of each pod still pending, the pods preemption deleted, the pending count over time, and each
score plugin's weighted score on the node each pod got.

What it does not model beyond Cycles' own limits (its docstring): controllers (a pod preemption deletes is
not re-created; a finished pod is not replaced), kubelets (a bound pod runs at once and for exactly its
duration), and the API server's latency."""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labkit.simulate.inputs import Arrival, SimProfile, Workload
from scheduler.framework import ClusterView
from scheduler.framework.result import ScheduleResult
from scheduler.model import NodeInfo, PodInfo, PodSpecError
from scheduler.testing import Cluster, Cycles

SAMPLES = 400  # points kept of the pending-over-time series (each change is recorded, then thinned)


@dataclass
class Run:
    """What one profile's run came to."""

    profile: SimProfile
    ended_at: float  # simulated seconds
    total: int = 0  # workload pods, those not arrived by the end included
    arrived: dict[str, float] = field(default_factory=dict)  # pod key -> arrival time
    bound_at: dict[str, float] = field(default_factory=dict)
    node_of: dict[str, str] = field(default_factory=dict)  # every workload pod ever bound -> its node
    finished: set[str] = field(default_factory=set)
    preempted: dict[str, str] = field(default_factory=dict)  # victim key -> the pod it made room for
    pending: dict[str, str] = field(default_factory=dict)  # pod key -> why (its last FailedScheduling message)
    score_totals: dict[str, int] = field(default_factory=dict)  # score plugin -> weighted score on chosen nodes
    pending_series: list[tuple[float, int]] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)  # at the end, every pod counted
    items: dict[str, str] = field(default_factory=dict)  # workload pod key -> its item
    explanation: Any = None  # labkit.placement.explain.Explanation of --explain's pod at its last decision
    wall_seconds: float = 0.0
    cycles: int = 0


Progress = Callable[[int, int], None]  # (pods settled, pods in all)


def run_profile(profile: SimProfile, cluster: Cluster, workload: Workload, *, until: float, seed: int = 0,
                explain: str | None = None, progress: Progress | None = None) -> Run:
    """Run ``workload`` on ``cluster`` through ``profile`` until nothing is left to happen or ``until``."""
    started = time.perf_counter()
    sim = Cycles(cluster, registry=profile.registry, config=profile.config, objects=workload.objects, seed=seed,
                 evict=True)
    run = Run(profile, 0.0)
    sim.on_decision = _decisions(sim, run, profile, explain)
    sim.on_evict = lambda victim, preemptor: run.preempted.__setitem__(victim.key, preemptor.key)
    arrivals = workload.arrivals
    finishes: list[tuple[float, str]] = []
    duration: dict[str, float | None] = {}
    i, total = 0, len(arrivals)
    while True:
        moments = [m for m in (arrivals[i].at if i < total else None, finishes[0][0] if finishes else None,
                               sim.next_moment()) if m is not None]
        if not moments:
            break  # nothing left to happen: the workload is done (or stuck for good)
        if min(moments) > until:
            sim.clock.now = max(sim.now, until)  # stopped by --until: the clock reads it
            break
        sim.clock.now = max(sim.now, min(moments))
        while i < total and arrivals[i].at <= sim.now:
            _arrive(sim, run, arrivals[i], profile, duration)
            i += 1
        while finishes and finishes[0][0] <= sim.now:
            _, key = heapq.heappop(finishes)
            if key in run.node_of and key not in run.preempted:
                run.finished.add(key)
                sim.delete_pod(key)
        run.cycles += sim.run_until_idle(max_cycles=sys.maxsize)
        for event in sim.events:
            if event.pod not in run.arrived:
                continue
            if event.reason == "Scheduled":
                run.bound_at[event.pod] = event.at
                run.node_of[event.pod] = sim.placements.get(event.pod, "")
                run.pending.pop(event.pod, None)
                if duration.get(event.pod) is not None:
                    heapq.heappush(finishes, (event.at + duration[event.pod], event.pod))
            else:
                run.pending[event.pod] = event.message
        sim.events.clear()  # read once: at 50,000 pods the lists would only grow
        sim.api.calls.clear()
        count = _pending_count(run)
        if not run.pending_series or run.pending_series[-1][1] != count:
            run.pending_series.append((sim.now, count))
        if progress is not None:
            progress(len(run.bound_at), total)
    run.ended_at = sim.now
    run.total = total
    run.pending_series.append((run.ended_at, _pending_count(run)))
    run.pending_series = _thinned(run.pending_series, SAMPLES)
    _settle_pending(sim, run)
    run.nodes = list(sim.nodes.values())
    run.wall_seconds = time.perf_counter() - started
    return run


def _arrive(sim: Cycles, run: Run, arrival: Arrival, profile: SimProfile, duration: dict[str, float | None]) -> None:
    pod = dict(arrival.pod, spec={**arrival.pod["spec"], "schedulerName": profile.scheduler_name})
    try:
        info = PodInfo.from_api(pod)
    except PodSpecError as err:  # the scheduler would report it; the pod stays pending with that reason
        run.arrived[arrival.key] = arrival.at
        run.items[arrival.key] = arrival.item
        run.pending[arrival.key] = f"invalid pod spec: {err.field}: {err.reason}"
        return
    run.arrived[arrival.key] = arrival.at
    run.items[arrival.key] = arrival.item
    duration[arrival.key] = arrival.duration
    sim.add_pod(info)


def _thinned(series: list[tuple[float, int]], most: int) -> list[tuple[float, int]]:
    """At most ``most`` points, evenly picked, the first and the last kept."""
    if len(series) <= most:
        return series
    step = (len(series) - 1) / (most - 1)
    return [series[round(i * step)] for i in range(most)]


def _pending_count(run: Run) -> int:
    """Pods arrived and never bound (preemption's victims were bound: they are not pending). O(1): it runs
    after every step."""
    return len(run.arrived) - len(run.bound_at)


def _settle_pending(sim: Cycles, run: Run) -> None:
    """Every workload pod not bound at the end, with why: its last FailedScheduling message, or where it
    waits (gated at PreEnqueue, held at Permit, never tried)."""
    gated, waiting, queued = sim.gated, sim.waiting, sim.queued
    for key in run.arrived:
        if key in run.bound_at or key in run.preempted:
            run.pending.pop(key, None)
            continue
        if key in gated:
            run.pending[key] = f"gated by {gated[key].plugin}: {gated[key].reason}"
        elif key in waiting:
            run.pending[key] = f"waiting at Permit ({', '.join(waiting[key].pending_plugins())})"
        elif key not in run.pending:
            run.pending[key] = f"not tried yet ({queued.get(key, 'queued')})"


def _decisions(sim: Cycles, run: Run, profile: SimProfile, explain: str | None) -> Callable[[PodInfo, ScheduleResult], None]:
    """The hook Cycles calls after each decision: score shares, and --explain's pod explained on the very
    snapshot its decision was made on."""
    totals = run.score_totals

    def hook(pod: PodInfo, result: ScheduleResult) -> None:
        if result.node_name is not None and result.scores:
            at = result.feasible_nodes.index(result.node_name)
            for plugin, weighted in result.scores.items():
                totals[plugin] = totals.get(plugin, 0) + weighted[at]
        if explain is not None and explain in (pod.key, pod.name):
            run.explanation = explain_now(sim, pod, profile, result)
    return hook


def explain_now(sim: Cycles, pod: PodInfo, profile: SimProfile, result: ScheduleResult) -> Any:
    """labkit.placement's explanation of ``pod`` on the simulation's current snapshot: every filter on every
    node, every score."""
    from labkit.placement.explain import SchedulerConfig, explain_pod

    snap = sim.cache.snapshot()
    cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, sim.cache.volumes, snap.traits,
                          kinds=sim.stores)
    config = SchedulerConfig(profile.config, f"profile {profile.label}")
    explanation = explain_pod(dict(pod._raw), cluster, config.profile(profile.scheduler_name), config.source)
    chose = f"chose {result.node_name}" if result.node_name else "found no node"
    explanation.notes.append(f"at simulated second {sim.now:g} (attempt of this pod; later ones replace it) "
                             f"the simulation's decision {chose}")
    return explanation
