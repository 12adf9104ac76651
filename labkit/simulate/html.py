"""`./lab simulate --html FILE`: the comparison as one self-contained HTML file, made from the JSON report
(report.report) so the page and `--json` never disagree: the summary side by side, charts drawn as inline
SVG (utilization per node, pending pods over simulated time, each plugin's share of the final scores; built
here, every name in them escaped, and marked safe in the template), the pods placed differently and, with
--explain, each profile's explain table, and every node as a cell of the placement page's grid with the
pending pods grouped by reason (labkit.ui.overview). Styles and scripts inline, nothing fetched: it opens
offline."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

import jinja2

from labdef.errors import UserError
from labkit.ui.overview import overview_html

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
BARS = 200  # at most this many bars per utilization chart: more nodes are grouped, sorted, into buckets
WIDTH, HEIGHT = 640, 160

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>simulate: {{ profiles | map(attribute='profile') | join(' vs ') }}</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
table { border-collapse: collapse; margin: 6px 0 14px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; text-align: left; }
td.n { text-align: right; } .dim { color: #666; } svg { display: block; margin: 4px 0 12px; }
.fits { background: #c8e6c9; } .fails { background: #ffcdd2; } small { display: block; color: #555; }
.key span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; }
</style></head><body>
<h1>simulate: {{ profiles | length }} profile{{ 's' if profiles | length > 1 }}</h1>
<p class="dim">All times are simulated seconds. The same workload and cluster went through each profile.</p>
<table><tr><th></th>{% for p in profiles %}<th>{{ p.profile }}{% if p.scheduler_name != p.profile %} <span class="dim">({{ p.scheduler_name }})</span>{% endif %}</th>{% endfor %}</tr>
{% for label, cell in rows %}<tr><td>{{ label }}</td>{% for p in profiles %}<td class="n">{{ cell(p) }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% if any_pending %}<h2>Pending at the end, by FailedScheduling message</h2>
{% for p in profiles %}{% if p.pending_reasons %}<h3>{{ p.profile }}</h3><table><tr><th>pods</th><th>why</th></tr>
{% for why, count in p.pending_reasons.items() %}<tr><td class="n">{{ count }}</td><td>{{ why }}</td></tr>{% endfor %}
</table>{% endif %}{% endfor %}{% endif %}
<h2>Pending pods over time</h2>
<p class="key">{% for p in profiles %}<span style="background: {{ colors[loop.index0 % colors | length] }}"></span>{{ p.profile }}{% endfor %}</p>
{{ pending_chart | safe }}
<h2>Every node at the end</h2>
<p class="dim">One cell per node, coloured by its requested share; the pods still pending grouped by why.</p>
{% for p in profiles %}<h3>{{ p.profile }}</h3>
{{ overview(p, loop.index0) | safe }}{% endfor %}
<h2>Utilization per node</h2>
<p class="dim">Requested over allocatable at the end; nodes sorted from most to least used{% if many_nodes %}, grouped
{{ group }} to a bar (their mean){% endif %}.</p>
{% for p in profiles %}<h3>{{ p.profile }}</h3>
{% for r in ('cpu', 'memory') %}<p>{{ r }}: mean {{ pct(p.utilization[r].mean) }}, sd {{ pct(p.utilization[r].stddev) }}</p>
{{ util_chart(p, r) | safe }}{% endfor %}{% endfor %}
<h2>Each plugin's share of the final scores</h2>
<p class="dim">The weighted scores every score plugin gave the node each pod got, summed over the pods.</p>
{{ shares_chart | safe }}
{% if differences %}<h2>Pods placed differently ({{ differences | length }}{% if differences | length > diff_limit %}, first {{ diff_limit }}{% endif %})</h2>
<p class="dim">Explain one: ./lab simulate ... --explain POD</p>
<table><tr><th>pod</th>{% for p in profiles %}<th>{{ p.profile }}</th>{% endfor %}</tr>
{% for pod, where in differences.items() %}{% if loop.index <= diff_limit %}<tr><td>{{ pod }}</td>{% for p in profiles %}<td>{{ where[p.profile] }}</td>{% endfor %}</tr>{% endif %}
{% endfor %}</table>{% endif %}
{% for label, x in explain.items() %}{% if x %}<h2>{{ label }}: why {{ x.pod }}</h2><p>{{ x.message }}</p>
{% set plugins = x.weights | list %}
<table><tr><th>node</th><th>pods</th><th>filters</th>{% for p in plugins %}<th>{{ p }} &times;{{ x.weights[p] }}</th>{% endfor %}<th>total</th></tr>
{% for n in x.nodes %}<tr><td>{{ n.node }}{% if n.node == x.chosen %} <b>(chosen)</b>{% endif %}</td><td class="n">{{ n.pods }}</td>
{% if n.fits %}<td class="fits">fits</td>{% else %}<td class="fails">{{ n.reasons | join('; ') }}</td>{% endif %}
{% for p in plugins %}<td class="n">{% if p in n.scores %}{{ n.scores[p] }}<small>{{ n.raw_scores[p] }}&rarr;{{
n.normalized_scores[p] }}</small>{% else %}-{% endif %}</td>{% endfor %}
<td class="n">{{ '-' if n.total is none else n.total }}</td></tr>{% endfor %}</table>
{% for note in x.notes %}<p class="dim">note: {{ note }}</p>{% endfor %}{% endif %}{% endfor %}
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True)
DIFF_LIMIT = 200


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:g} s"


ROWS = (
    ("pods", lambda p: p["pods"]), ("not arrived by the end", lambda p: p["not_arrived"]), ("bound", lambda p: p["bound"]), ("running at the end", lambda p: p["running"]),
    ("finished", lambda p: p["finished"]), ("preempted", lambda p: p["preempted"]), ("pending", lambda p: p["pending"]),
    ("time to bind p50", lambda p: _secs(p["time_to_bind"]["p50"])),
    ("time to bind p90", lambda p: _secs(p["time_to_bind"]["p90"])),
    ("time to bind p99", lambda p: _secs(p["time_to_bind"]["p99"])),
    ("nodes used", lambda p: f"{p['nodes_used']}/{p['nodes']}"),
    ("cpu use (mean, sd)", lambda p: f"{_pct(p['utilization']['cpu']['mean'])}, {_pct(p['utilization']['cpu']['stddev'])}"),
    ("memory use (mean, sd)",
     lambda p: f"{_pct(p['utilization']['memory']['mean'])}, {_pct(p['utilization']['memory']['stddev'])}"),
    ("largest pod still placeable", lambda p: "none" if not p["fragmentation"]["largest"]["pods"] else
     f"{p['fragmentation']['largest']['cpu']}m cpu, {p['fragmentation']['largest']['memory'] / 2**30:.1f}Gi"),
    ("pods per zone", lambda p: ", ".join(f"{z}: {n}" for z, n in p["spread"]["zone"].items()) or "-"),
    ("simulated end", lambda p: _secs(p["ended_at"])),
)


def _svg(body: str, width: int = WIDTH, height: int = HEIGHT) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img">{body}</svg>')


def _buckets(values: list[float]) -> tuple[list[float], int]:
    """Values sorted high to low, grouped (means) into at most BARS buckets; and the group size."""
    ordered = sorted(values, reverse=True)
    size = max(1, -(-len(ordered) // BARS))
    return [sum(chunk) / len(chunk) for i in range(0, len(ordered), size) if (chunk := ordered[i:i + size])], size


def util_chart(profile: dict[str, Any], resource: str) -> str:
    values, _ = _buckets(list(profile["utilization"][resource]["per_node"].values()))
    if not values:
        return ""
    bar = (WIDTH - 40) / len(values)
    plot = HEIGHT - 20
    parts = [f'<line x1="38" y1="{plot}" x2="{WIDTH}" y2="{plot}" stroke="#999"/>',
             f'<text x="0" y="12" font-size="10">100%</text><text x="0" y="{plot}" font-size="10">0%</text>']
    for i, v in enumerate(values):
        h = min(v, 1.0) * (plot - 4)
        parts.append(f'<rect x="{40 + i * bar:.1f}" y="{plot - h:.1f}" width="{max(bar - 1, 0.5):.1f}" height="{h:.1f}" '
                     f'fill="#1f77b4"><title>{v * 100:.1f}%</title></rect>')
    return _svg("".join(parts))


def pending_chart(profiles: list[dict[str, Any]]) -> str:
    series = [p["pending_over_time"] for p in profiles]
    end = max((t for s in series for t, _ in s), default=0) or 1
    top = max((n for s in series for _, n in s), default=0) or 1
    plot_w, plot_h = WIDTH - 50, HEIGHT - 30
    parts = [f'<line x1="45" y1="{plot_h}" x2="{WIDTH}" y2="{plot_h}" stroke="#999"/>',
             f'<text x="0" y="12" font-size="10">{top}</text><text x="0" y="{plot_h}" font-size="10">0</text>',
             f'<text x="45" y="{HEIGHT - 8}" font-size="10">0 s</text>',
             f'<text x="{WIDTH - 60}" y="{HEIGHT - 8}" font-size="10">{end:g} s</text>']
    for i, s in enumerate(series):
        points = []
        previous = 0
        for t, n in s:  # a step line: the count holds until the next sample
            x = 45 + t / end * plot_w
            points += [f"{x:.1f},{plot_h - previous / top * (plot_h - 4):.1f}",
                       f"{x:.1f},{plot_h - n / top * (plot_h - 4):.1f}"]
            previous = n
        parts.append(f'<polyline fill="none" stroke="{COLORS[i % len(COLORS)]}" stroke-width="1.5" '
                     f'points="{" ".join(points)}"><title>{escape(profiles[i]["profile"])}</title></polyline>')
    return _svg("".join(parts))


def shares_chart(profiles: list[dict[str, Any]]) -> str:
    plugins = sorted({k for p in profiles for k in p["score_shares"]})
    color = {name: COLORS[i % len(COLORS)] for i, name in enumerate(plugins)}
    row_h, label_w = 24, 160
    height = row_h * len(profiles) + 20 * (len(plugins) // 3 + 1) + 10
    parts = []
    for i, p in enumerate(profiles):
        y = i * row_h + 4
        parts.append(f'<text x="0" y="{y + 14}" font-size="11">{escape(p["profile"][:24])}</text>')
        x = label_w
        for name, share in p["score_shares"].items():
            w = share * (WIDTH - label_w)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 6}" fill="{color[name]}">'
                         f'<title>{escape(name)}: {share * 100:.1f}%</title></rect>')
            x += w
    legend_y = row_h * len(profiles) + 16
    for i, name in enumerate(plugins):
        x, y = (i % 3) * (WIDTH // 3), legend_y + (i // 3) * 20
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color[name]}"/>'
                     f'<text x="{x + 14}" y="{y}" font-size="11">{escape(name)}</text>')
    return _svg("".join(parts), height=height)


def _overview(profile: dict[str, Any], index: int) -> str:
    pending = [{"key": key, "reason": why} for key, why in profile["pending_pods"].items()]
    return overview_html(profile["node_grid"], pending, element_id=f"kv-overview-{index}")


def render_html(data: dict[str, Any]) -> str:
    """The page for a report as report.report gives it (with "explain" when --explain was given)."""
    profiles = data["profiles"]
    sizes = [len(p["utilization"]["cpu"]["per_node"]) for p in profiles]
    group = max(1, -(-max(sizes, default=0) // BARS))
    return _ENV.from_string(_TEMPLATE).render(
        profiles=profiles, rows=ROWS, colors=COLORS, pct=_pct, any_pending=any(p["pending"] for p in profiles),
        pending_chart=pending_chart(profiles), util_chart=util_chart, shares_chart=shares_chart(profiles),
        many_nodes=group > 1, group=group, differences=data["differences"], diff_limit=DIFF_LIMIT,
        explain=data.get("explain") or {}, overview=_overview)


def write_html(data: dict[str, Any], path: Path) -> None:
    try:
        path.write_text(render_html(data), encoding="utf-8")
    except OSError as err:
        raise UserError(f"--html {path}: cannot write the report: {err.strerror}") from None
