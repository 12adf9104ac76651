"""Show a RunReport: a rich table for people (with the why of every miss), or JSON for machines."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labkit.placement.checks import ScenarioResult
from labkit.placement.explain_view import print_explanation
from labkit.placement.judge import MISS, PASS
from labkit.placement.runner import RunReport

COLOURS = {PASS: "green", MISS: "red"}


SHORT_COLUMN_MAX = 20
MODES = {"standalone": "standalone", "extender": "extender mode: kube-scheduler asking the extender"}


def verdict_table(report: RunReport, width: int = 120) -> Table:
    rows = [(r.scenario.id, r.pod_summary, r.expected, r.node_summary, r.verdict.verdict, r.verdict.reason)
            for r in report.results]
    short = ["scenario", "pod", "expected", "node", "verdict"]
    widths = [min(max(len(h), *(len(row[i]) for row in rows)), SHORT_COLUMN_MAX) for i, h in enumerate(short)]
    # Fixed widths: what is left goes to the reason, the line people read (left to itself, rich would
    # shrink every column alike).
    reason_width = max(30, width - sum(widths) - 3 * len(widths) - 4)
    table = Table(title=f"placement: scheduler {report.scheduler} ({MODES[report.mode]}), "
                        f"namespace {report.namespace}", title_justify="left")
    for name, w in zip(short, widths, strict=True):
        table.add_column(name, width=w, overflow="fold")
    table.add_column("reason or event", width=reason_width, overflow="fold")
    for r, row in zip(report.results, rows, strict=True):
        colour = COLOURS.get(r.verdict.verdict, "yellow")
        table.add_row(*(escape(v) for v in row[:4]), f"[{colour}]{row[4]}[/]", escape(row[5]))
    return table


def print_misses(console: Console, results: list[ScenarioResult], mode: str = "standalone") -> None:
    for r in results:
        if r.verdict.verdict != MISS:
            continue
        console.print(f"\n[bold red]miss[/] [bold]{r.scenario.id}[/]: {escape(r.verdict.reason)}")
        for pod in r.pods:
            if pod.events:
                console.print(f"  events of {pod.name}:")
                for event in pod.events:
                    console.print(f"    {escape(str(event))}")
            else:
                console.print(f"  {pod.name}: no events")
        if r.explanation is not None:
            print_explanation(console, r.explanation, mode)


def print_report(console: Console, report: RunReport) -> None:
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    if report.problem:
        console.print(f"[bold red]{escape(report.problem)}[/]")
    if report.results:
        console.print(verdict_table(report, console.width))
        print_misses(console, report.results, report.mode)
    for line in report.cleanup:
        console.print(f"[dim]cleanup: {escape(line)}[/]")
    if report.kept:
        console.print("[yellow]--keep[/]: left in place for inspection; remove with:")
        for cmd in report.kept:
            console.print(f"  {escape(cmd)}")
    passed = sum(1 for r in report.results if r.verdict.verdict == PASS)
    missed = sum(1 for r in report.results if r.verdict.verdict == MISS)
    console.print(f"{passed} passed, {missed} missed, {len(report.results) - passed - missed} skipped "
                  f"in {report.seconds:.1f} s")


def as_json(report: RunReport) -> dict[str, Any]:
    return {
        "lab": report.lab,
        "server": report.server,
        "scheduler": report.scheduler,
        "namespace": report.namespace,
        "config_source": report.config_source,
        "mode": report.mode,
        "ok": report.exit_code == 0,
        "exit_code": report.exit_code,
        "problem": report.problem,
        "warnings": report.warnings,
        "seconds": round(report.seconds, 3),
        "results": [
            {
                "scenario": r.scenario.id,
                "title": r.scenario.title,
                "expected": r.expected,
                "verdict": r.verdict.verdict,
                "reason": r.verdict.reason,
                "seconds": round(r.seconds, 3),
                "pods": [{"name": p.name, "node": p.node, "phase": p.phase,
                          "events": [{"reason": e.reason, "message": e.message, "source": e.source}
                                     for e in p.events]} for p in r.pods],
                "explanation": r.explanation.as_json() if r.explanation else None,
            }
            for r in report.results
        ],
        "cleanup": report.cleanup,
        "kept": report.kept,
    }


def to_json(report: RunReport) -> str:
    return json.dumps(as_json(report), indent=2)
