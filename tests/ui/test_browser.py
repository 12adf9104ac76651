"""The placement page in a real browser (headless Chromium from Debian) against the API test server with the
real scheduler process: it renders the nodes (a node's pods when it is selected in the grid) and the pending
pods (grouped by why they wait), a binding appears without a reload, a selected pod's
verdicts equal `./lab explain --json`'s, a what-if manifest's error is shown naming the field, gang members
gated at PreEnqueue or held at Permit are marked and explained. Each test
saves a screenshot (docs/images/ui-*.png with KUBELAB_DOCS_WRITE=1: docs/user-guide/ui.md shows them)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver import KubeApiServer
from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster
from tests.placement.gang import add_member, podgroup
from tests.placement.standins import CONTROL_PLANE, WORKERS, DeploymentStandIn
from tests.ui.conftest import wait_for_page

pytestmark = [pytest.mark.browser]

SCHEDULER = "my-custom-scheduler"
LIVE_WITHIN = 1.0  # seconds from the binding to the pod on its node's column (issue 22)


def _open(driver: Any, url: str) -> None:
    driver.get(url)
    wait_for_page(driver, "document.body.dataset.loaded === 'true'")


def _pod_on_node(node: str, key: str) -> str:
    return f"document.querySelector('#node-detail[data-node=\"{node}\"] button[data-pod=\"{key}\"]')"


def _select_node(driver: Any, node: str) -> None:
    """Click the node's cell in the overview grid: its details and pods are shown."""
    wait_for_page(driver, f"document.querySelector('#grid [data-cell=\"{node}\"]')").click()
    wait_for_page(driver, f"document.getElementById('node-detail').dataset.node === '{node}'")


def _bound_node(server: KubeApiServer, name: str) -> str | None:
    pod = server.get_object("pods", name, "default") or {}
    return (pod.get("spec") or {}).get("nodeName")


def test_page_shows_nodes_and_pods(cluster: Cluster, deployed: DeploymentStandIn, ui_url: str, browser: Any,
                                   screenshots: Path) -> None:
    cluster.server.add_pod("web-0", cpu="500m", memory="256Mi", scheduler_name=SCHEDULER)
    cluster.server.add_pod("too-big", cpu="64", scheduler_name=SCHEDULER)
    node = cluster.server.wait_for(lambda: _bound_node(cluster.server, "web-0"))
    _open(browser, ui_url)
    for name in (CONTROL_PLANE, *WORKERS):
        _select_node(browser, name)
        wait_for_page(browser, _pod_on_node(name, f"kube-system/kube-proxy-{name}"))
    _select_node(browser, node)
    wait_for_page(browser, _pod_on_node(node, "default/web-0"))
    wait_for_page(browser, "document.querySelector('#pending button[data-pod=\"default/too-big\"]')")
    # the scheduler's FailedScheduling message is the pending pod's group (its event, watched)
    wait_for_page(browser, "document.querySelector('#pending button[data-pod=\"default/too-big\"]')"
                   "?.closest('.kv-reason').dataset.reason.includes('Insufficient cpu')")
    # preemption as the scheduler records it: the preemptor's nominated node, the victim's DisruptionTarget
    cluster.server.update_object("pods", "too-big", {"status": {"nominatedNodeName": WORKERS[1]}}, "default")
    cluster.server.update_object("pods", "web-0", {"status": {"conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}}, "default")
    _select_node(browser, WORKERS[1])
    wait_for_page(browser, f"document.querySelector('#node-detail[data-node=\"{WORKERS[1]}\"] .nominee[data-pod=\"default/too-big\"]')")
    _select_node(browser, node)
    wait_for_page(browser, "document.querySelector('#node-detail .preempted[data-pod=\"default/web-0\"]')")
    _select_node(browser, CONTROL_PLANE)
    taint = browser.execute_script("return document.getElementById('node-detail').innerText;")
    assert "node-role.kubernetes.io/control-plane:NoSchedule" in taint
    browser.save_screenshot(str(screenshots / "ui-nodes.png"))


def test_binding_appears_live(cluster: Cluster, deployed: DeploymentStandIn, ui_url: str, browser: Any,
                              screenshots: Path) -> None:
    """No reload: the page's own marker survives; the pod, searched for by name, is on its node within a second
    of the binding."""
    _open(browser, ui_url)
    browser.execute_script("window.notReloaded = true;")
    browser.find_element("id", "pod-filter").send_keys("live-1")
    cluster.server.add_pod("live-1", cpu="100m", scheduler_name=SCHEDULER)
    node = cluster.server.wait_for(lambda: _bound_node(cluster.server, "live-1"), timeout=30, interval=0.005)
    bound_at = time.monotonic()
    wait_for_page(browser, f"document.querySelector('#pod-results button[data-pod=\"default/live-1\"][data-on=\"{node}\"]')",
          timeout=LIVE_WITHIN + 5)
    elapsed = time.monotonic() - bound_at
    assert browser.execute_script("return window.notReloaded === true;")
    assert elapsed < LIVE_WITHIN, f"the binding took {elapsed:.2f} s to appear"
    browser.save_screenshot(str(screenshots / "ui-live.png"))


def _explain_json(cluster: Cluster, name: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "invoke", "explain", name, "--json", "--lab",
                           str(cluster.lab_file), "--kubeconfig", str(cluster.kubeconfig)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


ROWS = """return [...document.querySelectorAll('#explain-table tbody tr[data-node]')].map((tr) => ({
  node: tr.dataset.node, fits: tr.dataset.fits === 'true', reasons: JSON.parse(tr.dataset.reasons),
  total: tr.dataset.total === '' ? null : Number(tr.dataset.total),
  chosen: !!tr.querySelector('.tag:not(.tied)'),
  scores: Object.fromEntries([...tr.querySelectorAll('td[data-plugin]')].map(
    (td) => [td.dataset.plugin, Number(td.firstChild.textContent)]))}));"""


def test_selected_pod_shows_explain_verdicts(cluster: Cluster, deployed: DeploymentStandIn, ui_url: str,
                                             browser: Any, screenshots: Path) -> None:
    cluster.server.add_pod("web-0", cpu="500m", memory="256Mi", scheduler_name=SCHEDULER)
    node = cluster.server.wait_for(lambda: _bound_node(cluster.server, "web-0"))
    _open(browser, ui_url)
    _select_node(browser, node)
    wait_for_page(browser, _pod_on_node(node, "default/web-0")).click()
    wait_for_page(browser, "document.getElementById('explain').dataset.pod === 'default/web-0'", timeout=60)
    shown = browser.execute_script(ROWS)
    expected = _explain_json(cluster, "web-0")
    assert [r["node"] for r in shown] == [n["node"] for n in expected["nodes"]]
    for row, want in zip(shown, expected["nodes"], strict=True):
        assert (row["fits"], row["reasons"], row["total"]) == (want["fits"], want["reasons"], want["total"])
        assert row["scores"] == {p: s for p, s in want["scores"].items() if p in row["scores"]}
        assert row["chosen"] == (want["node"] == expected["chosen"])
    assert any(not r["fits"] for r in shown)  # the control plane's taint: a failing verdict is shown too
    browser.save_screenshot(str(screenshots / "ui-explain.png"))


def test_what_if_error_is_shown(cluster: Cluster, deployed: DeploymentStandIn, ui_url: str, browser: Any,
                                screenshots: Path, tmp_path: Path) -> None:
    before = len(cluster.server.pods())
    _open(browser, ui_url)
    manifest = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: probe\nspec:\n  containers:\n  - name: c\n"
                "    image: pause\n    resources:\n      requests:\n        cpu: lots\n")
    browser.execute_script("document.getElementById('whatif-text').value = arguments[0];", manifest)
    browser.find_element("id", "whatif-go").click()
    error = wait_for_page(browser, "document.getElementById('explain-error')?.innerText", timeout=60)
    assert "spec.containers[0].resources.requests.cpu" in error
    assert len(cluster.server.pods()) == before  # what-if creates nothing
    browser.save_screenshot(str(screenshots / "ui-whatif-error.png"))
    # a good manifest, uploaded: the explain view for it, and still nothing created
    good = tmp_path / "probe.yaml"
    good.write_text(manifest.replace("lots", "100m") + f"  schedulerName: {SCHEDULER}\n")
    browser.find_element("id", "whatif-file").send_keys(str(good))
    wait_for_page(browser, "document.getElementById('explain').dataset.pod === 'default/probe'", timeout=60)
    fits = browser.execute_script("return [...document.querySelectorAll('#explain-table tbody tr[data-node]')]"
                                  ".filter((tr) => tr.dataset.fits === 'true').map((tr) => tr.dataset.node);")
    assert sorted(fits) == sorted(WORKERS)
    assert len(cluster.server.pods()) == before


def test_gated_and_waiting_gang_members_are_marked_and_explained(gang_cluster: Any, ui_url: str, browser: Any,
                                                                 screenshots: Path) -> None:
    """The gang scheduler of examples/coscheduling, shipped by the lab and run by the real scheduler: a member
    of a gang not yet complete is marked gated in the pending list and explained with Coscheduling's reason;
    members the scheduler places and holds at Permit (their gang's third member is held back by a scheduling
    gate) are marked waiting, and explained as reserved and waiting, said to be inferred."""
    cluster, standin = gang_cluster
    cluster.server.create_object("podgroups.scheduling.x-k8s.io", podgroup("train", 3, 30))
    cluster.server.create_object("podgroups.scheduling.x-k8s.io", podgroup("big", 3, 120))
    add_member(cluster, "train-0", "train")
    add_member(cluster, "big-2", "big", schedulingGates=[{"name": "example.com/quota"}])
    add_member(cluster, "big-0", "big")
    add_member(cluster, "big-1", "big")
    cluster.server.wait_for(lambda: standin.process.log().count("waiting at Permit for Coscheduling") >= 2,
                            timeout=30)
    _open(browser, ui_url)
    pending = "document.querySelector('#pending button[data-pod=\"default/{}\"]')"
    wait_for_page(browser, pending.format("train-0") + "?.dataset.held === 'gated'", timeout=20)
    wait_for_page(browser, pending.format("big-0") + "?.dataset.held === 'would_wait'", timeout=20)
    assert browser.execute_script(f"return {pending.format('big-2')}.dataset.held;") == "gated"
    # the pending pods grouped by what holds them: the group's line says it
    group = f"{pending.format('big-1')}.closest('.kv-reason').dataset.reason"
    assert browser.execute_script(f"return {group};") == "waiting at Permit: Coscheduling (inferred)"
    browser.execute_script(f"{pending.format('train-0')}.click();")
    wait_for_page(browser, "document.getElementById('explain').dataset.pod === 'default/train-0'", timeout=60)
    points = browser.execute_script("return document.getElementById('points').innerText;")
    assert "gated at PreEnqueue by Coscheduling: PodGroup default/train has 1 of its minMember 3 pods" in points
    browser.execute_script(f"{pending.format('big-0')}.click();")
    wait_for_page(browser, "document.getElementById('explain').dataset.pod === 'default/big-0'", timeout=60)
    expected = _explain_json(cluster, "big-0")
    node = expected["points"]["node"]
    shown = browser.execute_script("const p = document.getElementById('points'); return {outcome: "
                                   "p.dataset.outcome, plugin: p.dataset.plugin, text: p.innerText, likely: "
                                   "document.getElementById('likely').innerText};")
    assert (shown["outcome"], shown["plugin"]) == ("would_wait", "Coscheduling")
    assert f"would wait at Permit on {node}" in shown["text"]
    assert "Coscheduling, up to 120s: PodGroup default/big has 1 of its minMember 3 pods placed" in shown["text"]
    assert f"likely now: reserved on {node}, waiting at Permit for Coscheduling" in shown["likely"]
    assert "inferred, not read" in shown["likely"]
    browser.save_screenshot(str(screenshots / "ui-gang.png"))
    # the scheduler's log readable through pods/log (the kubelet stand-in hands it the process's output): the
    # waiting marks say so, and the explanation names the node the scheduler reserved
    pod = "my-custom-scheduler-standin"
    cluster.server.update_pod(pod, {"status": {"containerStatuses": [
        {"name": "scheduler", "ready": True, "restartCount": 0, "state": {"running": {}}}]}}, "kube-system")
    cluster.server.write_pod_log(pod, standin.process.log(), "kube-system", container="scheduler")
    wait_for_page(browser, f"{group} === 'waiting at Permit: Coscheduling (from its log)'", timeout=20)
    browser.execute_script(f"{pending.format('big-1')}.click();")
    wait_for_page(browser, "document.getElementById('explain').dataset.pod === 'default/big-1'", timeout=60)
    likely = wait_for_page(browser, "document.getElementById('likely')?.innerText", timeout=30)
    assert "read from the scheduler's log (pod kube-system/my-custom-scheduler-standin)" in likely
