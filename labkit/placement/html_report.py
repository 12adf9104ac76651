"""test-placement's report as one self-contained HTML file (`--html FILE`): the run's verdicts, each
scenario's placements (pod -> node, phase, events) and, for a miss, the explain table with, for a resource
no node has enough of, what the pod asks and the most any node has free; nodes failing for the same reasons
share a row. Made from the JSON
report (report.as_json), so the file and `--json` never disagree; styles inline, no script, nothing fetched:
it opens offline, as a CI artifact or an attachment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from labdef.errors import UserError
from labkit.placement.explain_view import row_name, row_pods, verdict_rows

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>placement: {{ r.lab }} ({{ 'ok' if r.ok else 'missed' }})</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
table { border-collapse: collapse; margin: 6px 0 14px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; text-align: left; }
.pass { background: #c8e6c9; } .miss { background: #ffcdd2; } .skipped { background: #fff3c4; }
.fits { background: #c8e6c9; } .fails { background: #ffcdd2; }
.problem { color: #b71c1c; font-weight: bold; } .dim { color: #666; } small { display: block; color: #555; }
section { border-top: 1px solid #ddd; padding-top: 4px; }
</style></head><body>
<h1>placement: lab {{ r.lab }}</h1>
<p>scheduler <b>{{ r.scheduler }}</b> ({{ r.mode }}), config: {{ r.config_source }}; server {{ r.server }};
namespace {{ r.namespace }}; {{ '%.1f' % r.seconds }} s; <b class="{{ 'pass' if r.ok else 'miss' }}">{{
passed }} passed, {{ missed }} missed, {{ skipped }} skipped</b> (exit {{ r.exit_code }})</p>
{% if r.problem %}<p class="problem">{{ r.problem }}</p>{% endif %}
{% for w in r.warnings %}<p>warning: {{ w }}</p>{% endfor %}
{% if r.results %}
<h2>Verdicts</h2>
<table><tr><th>scenario</th><th>expected</th><th>placed</th><th>verdict</th><th>reason or event</th></tr>
{% for s in r.results %}<tr><td><a href="#{{ s.scenario }}">{{ s.scenario }}</a></td><td>{{ s.expected }}</td>
<td>{% for p in s.pods %}{{ p.name }} &rarr; {{ p.node or 'not bound' }}<br>{% endfor %}</td>
<td class="{{ s.verdict }}">{{ s.verdict }}</td><td>{{ s.reason }}</td></tr>
{% endfor %}</table>
<h2>Scenarios</h2>
{% for s in r.results %}<section id="{{ s.scenario }}">
<h3>{{ s.scenario }}: <span class="{{ s.verdict }}">{{ s.verdict }}</span></h3>
<p>{{ s.title }} <span class="dim">({{ '%.1f' % s.seconds }} s)</span></p>
<table><tr><th>pod</th><th>node</th><th>phase</th><th>events</th></tr>
{% for p in s.pods %}<tr><td>{{ p.name }}</td><td>{{ p.node or '-' }}</td><td>{{ p.phase }}</td>
<td>{% for e in p.events %}{{ e.reason }}: {{ e.message }}<br>{% endfor %}</td></tr>{% endfor %}
</table>
{% set x = s.explanation %}{% if x %}
<p>why {{ x.pod }}: {{ x.message }}</p>
{% for m in x.get('misses', []) %}<p class="miss-summary"><b>{{ m.resource }}:</b> the pod asks {{ m.asked_text }}; {{
m.summary }}</p>{% endfor %}
{% set d = x.get('devices') %}{% if d %}<div class="devices">
{% for c in d.claims %}<p><b>claim {{ c.claim }}</b> {% if c.allocated %}holds {% for h in c.holds %}{{ h.driver }}/{{
h.pool }}/{{ h.device }}{{ ', ' if not loop.last }}{% endfor %}{% if c.reserved_for %} (reserved for {{
c.reserved_for | join(', ') }}){% endif %}{% else %}is not allocated yet{% endif %}</p>{% endfor %}
{% if d.problem %}<p>devices: {{ d.problem }}</p>{% endif %}
{% if d.nodes %}<p class="dim">devices per node ({{ d.source }}):</p><ul>{% for n in d.nodes %}<li>{{ n.node }}: {{
n.detail }}</li>{% endfor %}</ul>{% endif %}</div>{% endif %}
{% set plugins = x.weights | list %}
<table><tr><th>node</th><th>pods</th><th>filters</th>{% for p in plugins %}<th>{{ p }} &times;{{ x.weights[p] }}</th>{% endfor %}<th>total</th></tr>
{% for group in rows(x.nodes) %}{% set n = group[0] %}<tr><td>{{ row_name(group | map(attribute='node') | list)
}}{% if n.node == x.chosen %} <b>(chosen)</b>{% endif %}{%
if n.node in x.would_choose and x.would_choose | length > 1 %} (tied best){% endif %}</td><td>{{
row_pods(group | map(attribute='pods') | list) }}</td>
{% if n.fits %}<td class="fits">fits</td>{% else %}<td class="fails">{{ n.reasons | join('; ') }}</td>{% endif %}
{% for p in plugins %}<td>{% if p in n.scores %}{{ n.scores[p] }}<small>{{ n.raw_scores[p] }}&rarr;{{
n.normalized_scores[p] }}</small>{% else %}-{% endif %}</td>{% endfor %}
<td>{{ '-' if n.total is none else n.total }}</td></tr>{% endfor %}
</table>
{% for note in x.notes %}<p class="dim">note: {{ note }}</p>{% endfor %}
{% endif %}</section>
{% endfor %}{% endif %}
{% if r.kept %}<h2>Kept (--keep)</h2>{% for cmd in r.kept %}<pre>{{ cmd }}</pre>{% endfor %}{% endif %}
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True)


def render_html(report: dict[str, Any]) -> str:
    """The page for a report as report.as_json gives it."""
    verdicts = [s["verdict"] for s in report["results"]]
    return _ENV.from_string(_TEMPLATE).render(
        r=report, rows=lambda nodes: verdict_rows(nodes, verdict=lambda n: (n["fits"], n["reasons"])),
        row_name=row_name, row_pods=row_pods, passed=verdicts.count("pass"), missed=verdicts.count("miss"),
        skipped=len(verdicts) - verdicts.count("pass") - verdicts.count("miss"))


def write_html(report: dict[str, Any], path: Path) -> None:
    try:
        path.write_text(render_html(report), encoding="utf-8")
    except OSError as err:
        raise UserError(f"--html {path}: cannot write the report: {err.strerror}") from None
