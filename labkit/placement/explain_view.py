"""An Explanation (explain.py) for people: nodes as rows, the chosen node and the near misses first, each
failing filter's reason (wrapped), each score plugin's weighted score over its raw -> normalised score, the
total; plugin columns are abbreviated with a legend. Nodes failing for the very same reasons share one row
that counts them (every node its own row with every_node); a resource miss is said once under the table:
what the pod asks and the most any node has free (explain_misses). `./lab explain` and test-placement's
misses print it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labkit.natural import natural_key
from labkit.placement.explain import Explanation
from labkit.placement.explain_devices import OURS

V = TypeVar("V")


def abbreviations(plugins: list[str]) -> dict[str, str]:
    """A short column name per plugin: its capitals (ImageLocality -> IL); plugins sharing them keep a letter
    more of each word (NodeAffinity, NumaAware -> NoAf, NuAw)."""
    capitals = {p: "".join(re.findall(r"[A-Z]", p)) or p for p in plugins}
    clashing = {c for c in capitals.values() if list(capitals.values()).count(c) > 1}
    return {p: "".join(w[:2] for w in re.findall(r"[A-Z][a-z]*", p)) if c in clashing else c
            for p, c in capitals.items()}


def scoring_plugins(explanation: Explanation) -> list[str]:
    """The score plugins, in the profile's order, that give some node a raw or final score other than 0."""
    return [p for p in explanation.weights
            if any(n.raw_scores.get(p) or n.normalized_scores.get(p) for n in explanation.nodes)]


def verdict_rows(nodes: list[V], every_node: bool = False,
                 verdict: Callable[[V], tuple[bool, list[str]]] = lambda n: (n.fits, n.reasons)) -> list[list[V]]:
    """The table's rows: each feasible node its own; failing nodes with identical reasons together, at the
    place of the first of them (every_node: each node its own row). `verdict` reads (fits, reasons) from a
    node's entry: a NodeVerdict by default, or its JSON (test-placement's HTML report)."""
    rows: list[list[V]] = []
    same: dict[tuple[str, ...], list[V]] = {}
    for n in nodes:
        fits, reasons = verdict(n)
        if fits or every_node:
            rows.append([n])
            continue
        key = tuple(reasons)
        if key not in same:
            same[key] = []
            rows.append(same[key])
        same[key].append(n)
    return rows


def row_name(names: list[str]) -> str:
    """A shared row's name: how many nodes, the first three in natural order."""
    if len(names) == 1:
        return names[0]
    ordered = sorted(names, key=natural_key)
    return f"{len(ordered)} nodes: {', '.join(ordered[:3])}{', …' if len(ordered) > 3 else ''}"


def row_pods(counts: list[int]) -> str:
    """A shared row's pod count: the one count, or the lowest-highest."""
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def explanation_table(explanation: Explanation, mode: str = "standalone", every_node: bool = False) -> Table:
    plugins = scoring_plugins(explanation)
    short = abbreviations(list(explanation.weights))
    # Extender mode: the verdicts are the extender's plugins', computed here (explain.py), not kube-scheduler's.
    whose = "the extender's verdicts, computed here; " if mode == "extender" else ""
    title = (f"why: {explanation.pod} ({whose}scheduler {explanation.scheduler}, "
             f"config: {explanation.config_source})")
    table = Table(title=escape(title),
                  title_justify="left", caption=_legend(explanation, plugins, short), caption_justify="left")
    table.add_column("node")
    table.add_column("pods", justify="right")
    table.add_column("filters", overflow="fold")
    for plugin in plugins:
        table.add_column(short[plugin], justify="right")
    table.add_column("total", justify="right")
    for group in verdict_rows(explanation.nodes, every_node):
        n = group[0]
        name = escape(row_name([g.node for g in group])) + (" [bold](chosen)[/]" if n.node == explanation.chosen else "")
        filters = "[green]fits[/]" if n.fits else "[red]" + escape("; ".join(n.reasons)) + "[/]"
        scores = [f"{n.scores[p]}\n[dim]{n.raw_scores[p]}→{n.normalized_scores[p]}[/]" if p in n.scores else "-"
                  for p in plugins]
        table.add_row(name, row_pods([g.pods for g in group]), filters, *scores, "-" if n.total is None else str(n.total))
    return table


def _legend(explanation: Explanation, shown: list[str], short: dict[str, str]) -> str:
    if not any(n.fits for n in explanation.nodes):
        return ""
    legend = "score cells: weighted score, under it raw→normalised (0..100)"
    if shown:
        legend += "; " + ", ".join(f"{short[p]} = {p} ×{explanation.weights[p]}" for p in shown)
    zero = [p for p in explanation.weights if p not in shown]
    if zero:
        legend += f"; 0 on every node: {', '.join(zero)}"
    return escape(legend)


def print_explanation(console: Console, explanation: Explanation, mode: str = "standalone",
                      every_node: bool = False) -> None:
    """The table (when there are nodes to show), what each resource miss needs, the notes, and the
    scheduler's (or the extender's) verdict."""
    if explanation.nodes:
        console.print(explanation_table(explanation, mode, every_node))
    for miss in explanation.misses:
        console.print(f"  [bold]{escape(miss.resource)}:[/] the pod asks {escape(miss.as_json()['asked_text'])}; "
                      f"{escape(miss.summary)}")
    print_devices(console, explanation, every_node)
    for note in explanation.notes:
        console.print(f"  note: {escape(note)}")
    if mode == "extender":
        console.print("  note: kube-scheduler's own plugins ran before the extender; its verdict is in the pod's "
                      "events")
    judge = "extender" if mode == "extender" else "scheduler"
    console.print(f"  {judge}'s verdict now: {escape(explanation.message)}")
    if explanation.likely_state:
        console.print(f"  likely now: {escape(explanation.likely_state)}")
        how = explanation.inferred or (f"read from {explanation.read_from}" if explanation.read_from else "")
        if how:
            console.print(f"  [dim]({escape(how)})[/]")


DEVICE_LINES = 20  # nodes whose devices are listed, unless every node is asked for


def print_devices(console: Console, explanation: Explanation, every_node: bool = False) -> None:
    """A pod with DRA claims: the devices its allocated claims hold, and each node's devices (kubelab's own
    detail), in the table's order."""
    report = explanation.devices
    if report is None:
        return
    for claim in report.claims:
        if claim.allocated:
            held = ", ".join(f"{d['driver']}/{d['pool']}/{d['device']}" for d in claim.holds) or "no devices"
            pods = f" (reserved for {', '.join(claim.reserved_for)})" if claim.reserved_for else ""
            console.print(f"  [bold]claim {escape(claim.claim)}[/] holds {escape(held)}{escape(pods)}")
        else:
            console.print(f"  [bold]claim {escape(claim.claim)}[/] is not allocated yet")
    if report.problem:
        console.print(f"  devices: {escape(report.problem)}")
    if not report.nodes:
        return
    console.print(f"  devices per node [dim]({escape(OURS)})[/]:")
    shown = report.nodes if every_node else report.nodes[:DEVICE_LINES]
    for node in shown:
        console.print(f"    {escape(node.node)}: {escape(node.text)}")
    if len(shown) < len(report.nodes):
        console.print(f"    … {len(report.nodes) - len(shown)} more nodes (--all or --json lists them)")
