"""The placement page's overview for a static HTML file: every node as a cell coloured by its requested share
of a resource, grouped by a label, and the pending pods grouped by reason with counts. The very pieces the
live page draws (static/views.js, views.css), inlined with the data: nothing is fetched, the file opens
offline. For reports made without a live page (a simulation's, a test run's).

    overview_html(nodes, pending) -> "<section ...>...</section>"   (put it anywhere in a page's <body>)

nodes: [{"name", "labels": {key: value}, "allocatable": {"cpu", "memory", "pods"}, "requested": {"cpu",
"memory", "pods"}, "unschedulable", "ready", "taints" ("key=value:Effect"; these three optional)}], cpu in
millicores, memory in bytes;
pending: [{"key": "namespace/name", "reason": "why it waits"}]. node_view() makes a node entry from the
scheduler's NodeInfo."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from scheduler.model import NodeInfo

STATIC = Path(__file__).parent / "static"
ZONE_LABEL = "topology.kubernetes.io/zone"
RESOURCES = ("cpu", "memory", "pods")


def node_view(node: NodeInfo) -> dict[str, Any]:
    """A grid entry for a node as the scheduler counts it: allocatable and what its pods request."""
    a, r = node.allocatable, node.requested
    return {"name": node.name, "labels": dict(node.labels),
            "allocatable": {"cpu": a.milli_cpu, "memory": a.memory, "pods": a.pods},
            "requested": {"cpu": r.milli_cpu, "memory": r.memory, "pods": node.pod_count},
            "unschedulable": node.unschedulable,
            "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.taints]}


def _check(nodes: list[dict[str, Any]], pending: list[dict[str, Any]], resource: str, element_id: str) -> None:
    if not re.fullmatch(r"[A-Za-z][\w-]*", element_id):
        raise ValueError(f"element_id: {element_id!r} is not an HTML id (a letter, then letters, digits, - or _)")
    if resource not in RESOURCES:
        raise ValueError(f"resource: {resource!r} is not one of {', '.join(RESOURCES)}")
    for i, n in enumerate(nodes):
        if not isinstance(n.get("name"), str) or not n["name"]:
            raise ValueError(f"nodes[{i}].name: required (the node's name)")
        for part in ("allocatable", "requested"):
            amounts = n.get(part)
            if not isinstance(amounts, dict) or any(not isinstance(amounts.get(r, 0), int) for r in RESOURCES):
                raise ValueError(f"nodes[{i}].{part} ({n['name']}): a map of cpu (millicores), memory (bytes) "
                                 f"and pods to whole numbers, got {amounts!r}")
    for i, p in enumerate(pending):
        if not isinstance(p.get("key"), str) or not p["key"]:
            raise ValueError(f"pending[{i}].key: required (\"namespace/name\")")


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no "</script>" can end it early)."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def overview_html(nodes: list[dict[str, Any]], pending: list[dict[str, Any]], *, resource: str = "cpu",
                  group_by: str = ZONE_LABEL, element_id: str = "kv-overview") -> str:
    """A self-contained <section> (styles and script inline) drawing the grid and the pending groups.
    Raises ValueError naming the entry and field that is missing or malformed."""
    _check(nodes, pending, resource, element_id)
    data = {"nodes": [{"labels": {}, **n} for n in nodes], "pending": pending, "resource": resource,
            "groupBy": group_by, "id": element_id}
    views_js = (STATIC / "views.js").read_text(encoding="utf-8")
    views_css = (STATIC / "views.css").read_text(encoding="utf-8")
    return f"""<section id="{element_id}" class="kv-overview">
<style>{views_css}</style>
<div class="kv-legend-slot"></div><div class="kv-grid"></div>
<h3 class="kv-pending-title"></h3><div class="kv-pending"></div>
<noscript>The node grid and the pending pods need JavaScript.</noscript>
<script>{views_js}
(() => {{
  const data = {_script_json(data)};
  const root = document.getElementById(data.id), V = KubelabViews;
  root.querySelector(".kv-legend-slot").innerHTML = V.legendHtml(data.resource);
  root.querySelector(".kv-grid").innerHTML = V.gridHtml(data.nodes, {{resource: data.resource, groupBy: data.groupBy}});
  root.querySelector(".kv-pending-title").textContent = `Pending (${{data.pending.length}})`;
  root.querySelector(".kv-pending").innerHTML = V.pendingHtml(V.pendingGroups(data.pending));
  root.dataset.drawn = "true";
}})();
</script>
</section>"""
