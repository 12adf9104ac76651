"""What each profile's run came to, and the side-by-side comparison: bound, pending (by FailedScheduling
message), preempted; simulated time-to-bind percentiles; nodes used; utilization per resource (mean, spread,
per node); fragmentation (the largest pod each node could still take); pods per topology domain; each score
plugin's share of the final scores; the pods placed differently by the profiles. As JSON (``summary``) and
as a terminal table (``print_report``)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labkit.simulate.engine import Run
from labkit.ui.overview import node_view
from scheduler.model import NodeInfo

DOMAINS = {"zone": "topology.kubernetes.io/zone", "region": "topology.kubernetes.io/region"}
RESOURCES = ("cpu", "memory", "pods")
DIFFERENCES_SHOWN = 10
REASONS_SHOWN = 3


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile (p in 0..100) of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return round(ordered[rank - 1], 3)


def _used(node: NodeInfo, resource: str) -> tuple[int, int]:
    """(requested, allocatable) of one resource on a node."""
    if resource == "cpu":
        return node.requested.milli_cpu, node.allocatable.milli_cpu
    if resource == "memory":
        return node.requested.memory, node.allocatable.memory
    return node.pod_count, node.allocatable.pods


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return {"mean": round(mean, 4), "stddev": round(var ** 0.5, 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def utilization(nodes: list[NodeInfo]) -> dict[str, Any]:
    """Per resource: the share of allocatable requested on each node, its mean and spread over the nodes."""
    out: dict[str, Any] = {}
    for resource in RESOURCES:
        per_node = {}
        for node in nodes:
            used, allocatable = _used(node, resource)
            per_node[node.name] = round(used / allocatable, 4) if allocatable else 0.0
        out[resource] = {**_stats(list(per_node.values())), "per_node": per_node}
    return out


def fragmentation(nodes: list[NodeInfo]) -> dict[str, Any]:
    """The largest pod each node could still take (free cpu in millicores, free memory in bytes, free pod
    slots), and the largest any node could take."""
    per_node = {}
    for node in nodes:
        free = {}
        for resource in RESOURCES:
            used, allocatable = _used(node, resource)
            free[resource] = max(allocatable - used, 0)
        if free["pods"] == 0:
            free = {"cpu": 0, "memory": 0, "pods": 0}
        per_node[node.name] = free
    largest = max(per_node.values(), key=lambda f: (f["cpu"], f["memory"]), default={"cpu": 0, "memory": 0, "pods": 0})
    return {"largest": largest, "per_node": per_node}


def spread(run: Run) -> dict[str, dict[str, int]]:
    """Workload pods running at the end per topology domain: by zone (topology.kubernetes.io/zone) and, when
    nodes carry it, by region; "(none)" counts the pods on nodes without the label."""
    out = {}
    for name, label in DOMAINS.items():
        if name != "zone" and not any(label in n.labels for n in run.nodes):
            continue
        domain_of = {n.name: n.labels.get(label, "(none)") for n in run.nodes}
        counts: Counter[str] = Counter()
        for key, node in run.node_of.items():
            if key not in run.finished and key not in run.preempted:
                counts[domain_of.get(node, "(none)")] += 1
        out[name] = dict(sorted(counts.items()))
    return out


def score_shares(run: Run) -> dict[str, float]:
    total = sum(run.score_totals.values())
    if not total:
        return {}
    return {plugin: round(value / total, 4) for plugin, value in
            sorted(run.score_totals.items(), key=lambda kv: -kv[1])}


def summary(run: Run) -> dict[str, Any]:
    """One profile's outcome as JSON-ready data."""
    waits = [run.bound_at[k] - run.arrived[k] for k in run.bound_at]
    reasons = Counter(run.pending.values())
    return {
        "profile": run.profile.label, "scheduler_name": run.profile.scheduler_name,
        "ended_at": run.ended_at, "pods": run.total, "not_arrived": run.total - len(run.arrived),
        "bound": len(run.bound_at),
        "running": len([k for k in run.bound_at if k not in run.finished and k not in run.preempted]),
        "finished": len(run.finished), "preempted": len(run.preempted), "pending": len(run.pending),
        "pending_reasons": dict(reasons.most_common()),
        "pending_pods": dict(sorted(run.pending.items())),
        "time_to_bind": {f"p{p}": percentile(waits, p) for p in (50, 90, 99)} | {"max": percentile(waits, 100)},
        "nodes": len(run.nodes), "nodes_used": sum(1 for n in run.nodes if n.pod_count),
        "utilization": utilization(run.nodes), "fragmentation": fragmentation(run.nodes),
        "node_grid": [node_view(n) for n in run.nodes],
        "spread": spread(run), "score_shares": score_shares(run),
        "pending_over_time": [[t, n] for t, n in run.pending_series],
        "placements": dict(sorted(run.node_of.items())), "preempted_pods": dict(sorted(run.preempted.items())),
        "scheduling_cycles": run.cycles, "wall_seconds": round(run.wall_seconds, 3),
        "pods_per_second": round(len(run.arrived) / run.wall_seconds, 1) if run.wall_seconds else None,
    }


def differences(runs: list[Run]) -> dict[str, dict[str, str]]:
    """The workload pods whose outcome differs between the profiles: pod -> profile -> node (or "pending",
    "preempted")."""
    if len(runs) < 2:
        return {}
    out = {}
    for key in runs[0].arrived:
        where = {r.profile.label: _outcome(r, key) for r in runs}
        if len(set(where.values())) > 1:
            out[key] = where
    return out


def _outcome(run: Run, key: str) -> str:
    if key in run.preempted:
        return "preempted"
    return run.node_of.get(key, "pending")


def report(runs: list[Run]) -> dict[str, Any]:
    return {"profiles": [summary(r) for r in runs], "differences": differences(runs)}


# ------------------------------------------------------------------------------------------ terminal


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}s"


def _mib(value: int) -> str:
    return f"{value / 2**30:.1f}Gi" if value >= 2**30 else f"{value / 2**20:.0f}Mi"


def print_report(console: Console, data: dict[str, Any]) -> None:
    """The profiles side by side, then the pods they place differently."""
    profiles = data["profiles"]
    table = Table(title="simulate: the workload through each profile (simulated time)", title_justify="left")
    table.add_column("")
    for p in profiles:
        table.add_column(escape(p["profile"]), justify="right", overflow="fold")

    def row(name: str, cell) -> None:
        table.add_row(name, *[cell(p) for p in profiles])

    row("pods", lambda p: str(p["pods"]))
    if any(p["not_arrived"] for p in profiles):
        row("  not arrived by the end", lambda p: str(p["not_arrived"]))
    row("bound", lambda p: str(p["bound"]))
    row("  running at the end", lambda p: str(p["running"]))
    row("  finished", lambda p: str(p["finished"]))
    row("preempted", lambda p: str(p["preempted"]))
    row("pending", lambda p: str(p["pending"]))
    for i in range(min(REASONS_SHOWN, max(len(p["pending_reasons"]) for p in profiles))):
        row(f"  why #{i + 1}" if i else "  why (most pods first)", lambda p, i=i: _reason(p, i))
    row("time to bind p50/p90/p99", lambda p: " / ".join(_seconds(p["time_to_bind"][k]) for k in ("p50", "p90", "p99")))
    row("nodes used", lambda p: f"{p['nodes_used']}/{p['nodes']}")
    for resource in ("cpu", "memory", "pods"):
        row(f"{resource} use mean ± sd", lambda p, r=resource: f"{_pct(p['utilization'][r]['mean'])} ± "
                                                          f"{_pct(p['utilization'][r]['stddev'])}")
    row("largest pod still placeable", lambda p: _largest(p["fragmentation"]["largest"]))
    row("pods per zone", lambda p: ", ".join(f"{z} {n}" for z, n in p["spread"]["zone"].items()) or "-")
    row("score shares", lambda p: "\n".join(f"{k} {v * 100:.0f}%" for k, v in list(p["score_shares"].items())[:5]) or "-")
    row("simulated end", lambda p: _seconds(p["ended_at"]))
    console.print(table)
    diffs = data["differences"]
    if len(profiles) > 1:
        if not diffs:
            console.print("every pod ends where it ends in every profile")
        else:
            shown = list(diffs.items())[:DIFFERENCES_SHOWN]
            more = f", the first {len(shown)} (all: --json)" if len(diffs) > len(shown) else ""
            diff_table = Table(title=f"pods placed differently: {len(diffs)}{more}; why: --explain POD",
                               title_justify="left")
            diff_table.add_column("pod")
            for p in profiles:
                diff_table.add_column(escape(p["profile"]))
            for key, where in shown:
                diff_table.add_row(escape(key), *[escape(where[p["profile"]]) for p in profiles])
            console.print(diff_table)


def _reason(profile: dict[str, Any], i: int) -> str:
    reasons = list(profile["pending_reasons"].items())
    if i >= len(reasons):
        return ""
    message, count = reasons[i]
    return escape(f"{count}× {message}")


def _largest(free: dict[str, int]) -> str:
    return f"{free['cpu']}m cpu, {_mib(free['memory'])}" if free["pods"] else "none"
