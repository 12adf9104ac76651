"""test-placement --html: the run's report as one self-contained HTML file."""

from __future__ import annotations

import re
from pathlib import Path

from labkit.placement.html_report import render_html
from tests.placement.conftest import Cluster
from tests.placement.standins import CONTROL_PLANE, WORKERS, DeploymentStandIn

_MISS = {"scenario": "high-speed", "title": "a <b>title</b>", "expected": "nodes with x=y", "verdict": "miss",
         "reason": "p bound to w2, not to w1", "seconds": 1.2,
         "pods": [{"name": "p", "node": "w2", "phase": "Pending",
                   "events": [{"reason": "Scheduled", "message": "Successfully assigned", "source": "s"}]}],
         "explanation": {"pod": "ns/p", "scheduler": "s", "config_source": "c", "message": "would choose w2",
                         "chosen": "w2", "would_choose": ["w2"], "bound_to": "w2", "notes": ["a note"],
                         "weights": {"LeastLoaded": 1},
                         "nodes": [{"node": "w2", "fits": True, "reasons": [], "scores": {"LeastLoaded": 90},
                                    "raw_scores": {"LeastLoaded": 9}, "normalized_scores": {"LeastLoaded": 90},
                                    "total": 90, "pods": 1},
                                   {"node": "cp", "fits": False, "reasons": ["TaintToleration: untolerated"],
                                    "scores": {}, "raw_scores": {}, "normalized_scores": {}, "total": None,
                                    "pods": 2}]}}
_REPORT = {"lab": "l", "server": "http://127.0.0.1:1", "scheduler": "s", "namespace": "placement-x",
           "config_source": "c", "mode": "standalone", "ok": False, "exit_code": 1, "problem": None,
           "warnings": ["w <1>"], "seconds": 3.0, "results": [_MISS], "cleanup": [], "kept": []}


def test_a_miss_shows_its_placement_and_why_escaped() -> None:
    page = render_html(_REPORT)
    assert "0 passed, 1 missed, 0 skipped" in page
    assert "p &rarr; w2" in page and 'class="miss"' in page
    assert "a &lt;b&gt;title&lt;/b&gt;" in page and "w &lt;1&gt;" in page  # text is escaped
    assert "TaintToleration: untolerated" in page and "w2 <b>(chosen)</b>" in page and "9&rarr;90" in page


def _external_references(page: str) -> list[str]:
    return re.findall(r"""(?:src|href)\s*=\s*["']?(?!#)[^"'\s>]+""", page) + re.findall(r"@import|url\(", page)


def test_html_file_of_a_real_run(cluster: Cluster, deployed: DeploymentStandIn, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = cluster.run("--only", "anti-affinity", "--html", str(out), via_invoke=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = out.read_text()
    assert "1 passed, 0 missed, 0 skipped" in page and 'class="pass">pass<' in page
    placed = re.findall(r"(\S+) &rarr; (\S+)<br>", page)
    assert placed and {node for _pod, node in placed} <= set(WORKERS) and CONTROL_PLANE not in page
    assert _external_references(page) == []  # self-contained: nothing to fetch


def test_html_file_that_cannot_be_written_is_named(cluster: Cluster, deployed: DeploymentStandIn,
                                                   tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "report.html"
    proc = cluster.run("--only", "anti-affinity", "--html", str(missing))
    assert proc.returncode == 2
    assert f"--html {missing}: cannot write the report" in proc.stderr
    assert "1 passed, 0 missed" in proc.stdout  # the report itself is printed first


def test_a_resource_miss_says_the_ask_and_the_most_free() -> None:
    miss = {"resource": "cpu", "asked_text": "3", "summary": "no node has 3 cpu free; the most is 1.5 on node-7"}
    explanation = {**_MISS["explanation"], "misses": [miss]}
    page = render_html({**_REPORT, "results": [{**_MISS, "explanation": explanation}]})
    assert "<b>cpu:</b> the pod asks 3; no node has 3 cpu free; the most is 1.5 on node-7" in page


def test_nodes_failing_alike_share_one_row() -> None:
    failing = [{"node": f"node-{i}", "fits": False, "reasons": ["NodeResourcesFit: Insufficient cpu"], "scores": {},
                "raw_scores": {}, "normalized_scores": {}, "total": None, "pods": 2 + i % 2} for i in range(12)]
    explanation = {**_MISS["explanation"], "nodes": [*_MISS["explanation"]["nodes"], *failing]}
    page = render_html({**_REPORT, "results": [{**_MISS, "explanation": explanation}]})
    assert "<td>12 nodes: node-0, node-1, node-2, …</td><td>2-3</td>" in page
    assert page.count("Insufficient cpu") == 1


def test_a_pod_with_dra_claims_shows_each_nodes_devices_and_what_claims_hold() -> None:
    """The explanation's device lines (kubelab's own, beside kube-scheduler's "cannot allocate all claims"), made
    by the real explain code for a pod claiming 4 GPUs where node a has 3, 2 of them held, and b has 2."""
    from tests.placement.test_explain_devices import allocated, claiming, explain
    from tests.scheduler_api.test_dra import claim

    claims = [allocated(claim("held", 2), "a", ["gpu-0", "gpu-1"], "other"), claim("want", 4)]
    why = explain(claiming("p", "want"), claims).as_json()
    page = render_html({**_REPORT, "results": [{**_MISS, "explanation": why}]})
    assert "devices per node (kubelab&#39;s detail" in page
    assert "<li>a: gpu.example.com: 3 devices, 2 held by claim default/held;" in page
    assert "<b>claim default/want</b> is not allocated yet" in page
