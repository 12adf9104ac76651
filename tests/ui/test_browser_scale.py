"""The placement page at 500 nodes in a real browser (headless Chromium from Debian) against the API test
server, as `./lab ui` serves it: the overview grid shows every node as one cell in natural order (node-2
before node-10), grouped by zone or any label; the node and pod filters narrow it; the pending pods are
grouped by their FailedScheduling message with counts; a pod asking more cpu than any node has free is
explained by what it asks and the most any node has free. No scheduler runs: the pods stay where they are
put, and the scheduler's verdicts are its FailedScheduling events, written here as it writes them. Each test
saves a screenshot (docs/images/ui-*.png with KUBELAB_DOCS_WRITE=1)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver import KubeApiServer
from kubeapi_testserver.fixtures import running_server
from labkit.natural import natural_sorted
from tests.placement.standins import write_lab
from tests.ui.conftest import lab_ui, wait_for_page

pytestmark = [pytest.mark.browser]

NODES = 500
ZONES = ("zone-a", "zone-b", "zone-c", "zone-d", "zone-e")
GPU_NODES = 50  # node-0 .. node-49 carry pool=gpu
ROOMY = "node-7"  # 2.5 cpu free; every other node 2
CPU_MISS = ("0/500 nodes are available: 500 Insufficient cpu. preemption: 0/500 nodes are available: "
            "500 No preemption victims found for incoming pod.")
SELECTOR_MISS = ("0/500 nodes are available: 500 node(s) didn't match Pod's node affinity/selector. "
                 "preemption: 0/500 nodes are available: 500 Preemption is not helpful for scheduling.")
GROUPS = {CPU_MISS: 81, SELECTOR_MISS: 40, "no scheduling attempt reported yet": 10}


def _failed(server: KubeApiServer, pod: str, message: str, i: int) -> None:
    """A FailedScheduling event as kube-scheduler records it (core/v1 Event, involvedObject the pod)."""
    server.create_object("events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{pod}.{i:x}", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod}, "reason": "FailedScheduling",
        "message": message, "type": "Warning", "lastTimestamp": "2026-11-28T21:00:00Z", "count": 1,
        "source": {"component": "my-custom-scheduler"}})


def _fill(server: KubeApiServer) -> None:
    for i in range(NODES):
        labels = {"topology.kubernetes.io/zone": ZONES[i % len(ZONES)], **({"pool": "gpu"} if i < GPU_NODES else {})}
        server.add_node(f"node-{i}", cpu="4", memory="16Gi", labels=labels)
    for i in range(NODES):  # 2 cpu requested on every node, 1.5 on node-7
        node = f"node-{i}"
        server.add_pod(f"app-{i}-a", cpu="1", memory="1Gi", node_name=node)
        server.add_pod(f"app-{i}-b", cpu="500m" if node == ROOMY else "1", memory="1Gi", node_name=node)
    server.add_pod("big", cpu="3", memory="1Gi")
    _failed(server, "big", CPU_MISS, 0)
    for i in range(80):
        server.add_pod(f"wide-{i}", cpu="3")
        _failed(server, f"wide-{i}", CPU_MISS, i)
    for i in range(40):
        server.add_pod(f"picky-{i}", node_selector={"disk": "nvme"})
        _failed(server, f"picky-{i}", SELECTOR_MISS, i)
    for i in range(10):
        server.add_pod(f"new-{i}")


@pytest.fixture(scope="module")
def big_ui() -> Iterator[str]:
    """500 nodes, 1,000 bound pods and 131 pending ones on the API test server; `./lab ui` serving them."""
    with running_server() as server, tempfile.TemporaryDirectory(prefix="kubelab-ui-scale-") as tmp:
        _fill(server)
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        with lab_ui(write_lab(Path(tmp) / "lab.yaml"), kubeconfig) as url:
            yield url


def _wait(driver: Any, script: str, timeout: float = 20.0) -> Any:
    return wait_for_page(driver, script, timeout, poll=0.05)  # 500 cells take longer to draw


def _open(driver: Any, url: str) -> None:
    driver.get(url)
    _wait(driver, f"document.querySelectorAll('#grid .kv-cell').length === {NODES}", timeout=60)
    _wait(driver, "document.querySelectorAll('#pending details.kv-reason').length === 3", timeout=30)


def _cells(driver: Any) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('#grid .kv-cell')].map((c) => c.dataset.cell);")


def _choose(driver: Any, select: str, value: str) -> None:
    driver.execute_script(f"const s = document.getElementById('{select}'); s.value = arguments[0]; "
                          "s.dispatchEvent(new Event('change'));", value)


def _type(driver: Any, field: str, text: str) -> None:
    """Empty the field as a user does (select all, delete: an input event), then type `text`."""
    from selenium.webdriver.common.keys import Keys

    element = driver.find_element("id", field)
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    if text:
        element.send_keys(text)


def test_grid_shows_every_node_in_natural_order_grouped_by_zone(big_ui: str, browser: Any,
                                                                screenshots: Path) -> None:
    _open(browser, big_ui)
    groups = browser.execute_script(
        "return [...document.querySelectorAll('#grid .kv-group')].map((g) => [g.dataset.group, "
        "[...g.querySelectorAll('.kv-cell')].map((c) => c.dataset.cell)]);")
    assert [g for g, _ in groups] == list(ZONES)
    for zone, cells in groups:
        members = [f"node-{i}" for i in range(NODES) if ZONES[i % len(ZONES)] == zone]
        assert cells == natural_sorted(members)  # node-5 before node-10, not after node-495
    browser.save_screenshot(str(screenshots / "ui-overview.png"))
    # the page's order is labkit.natural's
    names = ["node-10", "node-2", "node-1", "a", "node-1a", "node-01", "Node-3", "node-", "10", "9", "1b"]
    assert browser.execute_script("return arguments[0].slice().sort(KubelabViews.naturalCompare);",
                                  names) == natural_sorted(names)
    _choose(browser, "group-by", "")
    _wait(browser, "document.querySelectorAll('#grid .kv-group').length === 1")
    assert _cells(browser) == [f"node-{i}" for i in range(NODES)]
    _choose(browser, "group-by", "pool")
    _wait(browser, "document.querySelectorAll('#grid .kv-group').length === 2")
    sizes = browser.execute_script("return [...document.querySelectorAll('#grid .kv-group')].map((g) => "
                                   "[g.dataset.group, g.querySelectorAll('.kv-cell').length]);")
    assert sizes == [["gpu", GPU_NODES], ["", NODES - GPU_NODES]]


def test_colour_follows_the_chosen_resource(big_ui: str, browser: Any) -> None:
    _open(browser, big_ui)
    share = f"document.querySelector('[data-cell=\"{ROOMY}\"]').dataset.share"
    assert browser.execute_script(f"return {share};") == "0.375"  # 1.5 of 4 cpu
    _choose(browser, "resource", "pods")
    _wait(browser, f"{share} === '0.018'")  # 2 of 110 pods


def test_filters_narrow_the_grid_and_the_pods(big_ui: str, browser: Any) -> None:
    _open(browser, big_ui)
    _type(browser, "node-filter", "pool=gpu")
    _wait(browser, f"document.querySelectorAll('#grid .kv-cell').length === {GPU_NODES}")
    assert set(_cells(browser)) == {f"node-{i}" for i in range(GPU_NODES)}
    assert browser.find_element("id", "grid-count").text == f"{GPU_NODES} of {NODES} nodes"
    _type(browser, "node-filter", "node-49")
    _wait(browser, "document.querySelectorAll('#grid .kv-cell').length === 11")
    assert set(_cells(browser)) == {"node-49", *(f"node-{i}" for i in range(490, 500))}
    _type(browser, "node-filter", "")
    _type(browser, "pod-filter", "app-7-")
    _wait(browser, "document.querySelectorAll('#pod-results button.pod').length === 2")
    assert browser.execute_script("return [...document.querySelectorAll('#grid .kv-cell.hit')]"
                                   ".map((c) => c.dataset.cell);") == [ROOMY]
    _type(browser, "pod-filter", "picky-1")  # picky-1, picky-10 .. picky-19
    _wait(browser, "document.querySelectorAll('#pending details.kv-reason').length === 1")
    assert browser.execute_script("return document.querySelector('#pending .kv-reason').dataset.count;") == "11"


def test_clicking_a_node_shows_its_pods(big_ui: str, browser: Any) -> None:
    _open(browser, big_ui)
    browser.find_element("css selector", f"[data-cell=\"{ROOMY}\"]").click()
    _wait(browser, f"document.getElementById('node-detail').dataset.node === '{ROOMY}'")
    shown = browser.execute_script("return [...document.querySelectorAll('#node-detail button.pod')]"
                                   ".map((b) => b.dataset.pod);")
    assert shown == ["default/app-7-a", "default/app-7-b"]
    detail = browser.find_element("id", "node-detail").text
    assert "zone zone-c" in detail and "cpu 1500m / 4000m" in detail


def test_pending_pods_are_grouped_by_reason_with_counts(big_ui: str, browser: Any, screenshots: Path) -> None:
    _open(browser, big_ui)
    groups = browser.execute_script("return [...document.querySelectorAll('#pending .kv-reason')].map((d) => "
                                    "[d.dataset.reason, Number(d.dataset.count), d.open, "
                                    "d.querySelector('summary').innerText]);")
    assert [(reason, count) for reason, count, _, _ in groups] == list(GROUPS.items())
    assert not any(is_open for _, _, is_open, _ in groups)  # one line per reason until opened
    assert groups[0][3].startswith("81")
    browser.find_element("css selector", "#pending .kv-reason summary").click()
    _wait(browser, "document.querySelector('#pending .kv-reason').open")
    pods = browser.execute_script("return [...document.querySelectorAll('#pending .kv-reason')[0]"
                                  ".querySelectorAll('button.pod')].map((b) => b.dataset.pod);")
    assert pods == ["default/big", *(f"default/wide-{i}" for i in range(80))]
    browser.save_screenshot(str(screenshots / "ui-pending.png"))


def test_a_resource_miss_shows_the_ask_and_the_most_free(big_ui: str, browser: Any, screenshots: Path) -> None:
    _open(browser, big_ui)
    browser.execute_script("document.querySelector('#pending button.pod[data-pod=\"default/big\"]').click();")
    _wait(browser, "document.getElementById('explain').dataset.pod === 'default/big'", timeout=120)
    miss = browser.execute_script("const m = document.querySelector('#misses .miss'); return {resource: "
                                  "m.dataset.resource, asked: m.dataset.asked, most: m.dataset.mostFree, "
                                  "node: m.dataset.node, text: m.innerText};")
    assert (miss["resource"], miss["asked"], miss["most"], miss["node"]) == ("cpu", "3", "2.5", ROOMY)
    assert miss["text"] == f"cpu: the pod asks 3; no node has 3 cpu free; the most is 2.5 on {ROOMY}"
    # the 500 identical verdicts are one row that counts them, until every node is asked for
    rows = "[...document.querySelectorAll('#explain-table tbody tr[data-node]')]"
    assert browser.execute_script(f"return {rows}.map((r) => Number(r.dataset.count));") == [NODES]
    assert browser.execute_script(f"return {rows}[0].cells[0].innerText;") == "500 nodes: node-0, node-1, node-2, …"
    browser.find_element("id", "explain-every").click()
    _wait(browser, f"{rows}.length === {NODES}")
    assert browser.execute_script(f"return {rows}.map((r) => r.dataset.node);") == [f"node-{i}" for i in range(NODES)]
    browser.find_element("id", "explain-every").click()
    _wait(browser, f"{rows}.length === 1")
    browser.save_screenshot(str(screenshots / "ui-miss.png"))


def test_page_load_at_500_nodes_is_reported(big_ui: str, browser: Any) -> None:
    """A number, not a limit: from navigation start to the first snapshot drawn (benchmarks/ui_page.py
    measures 5,000 pods)."""
    _open(browser, big_ui)
    drawn = float(_wait(browser, "document.body.dataset.drawnAt"))
    print(f"\nplacement page, {NODES} nodes, {2 * NODES + sum(GROUPS.values())} pods: drawn {drawn:.0f} ms "
          "after navigation start")


def test_a_static_report_draws_the_same_pieces(browser: Any, tmp_path: Path) -> None:
    """labkit.ui.overview's section in a file opened offline: the grid and the pending groups, no server."""
    from labkit.ui.overview import overview_html

    nodes = [{"name": f"node-{i}", "labels": {"topology.kubernetes.io/zone": ZONES[i % len(ZONES)]},
              "allocatable": {"cpu": 4000, "memory": 16 << 30, "pods": 110},
              "requested": {"cpu": 1500 if f"node-{i}" == ROOMY else 2000, "memory": 2 << 30, "pods": 2}}
             for i in reversed(range(NODES))]
    pending = [{"key": f"default/wide-{i}", "reason": CPU_MISS} for i in range(80)] + [
        {"key": f"default/picky-{i}", "reason": SELECTOR_MISS} for i in range(40)]
    page = tmp_path / "report.html"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>"
                    f"{overview_html(nodes, pending)}</body></html>", encoding="utf-8")
    browser.get(page.as_uri())
    _wait(browser, "document.getElementById('kv-overview').dataset.drawn === 'true'")
    cells = browser.execute_script("return [...document.querySelectorAll('.kv-cell[data-cell]')]"
                                   ".map((c) => c.dataset.cell);")
    assert len(cells) == NODES and cells[:3] == ["node-0", "node-5", "node-10"]  # zone-a first, natural order
    counts = browser.execute_script("return [...document.querySelectorAll('.kv-reason')].map((d) => "
                                    "[d.dataset.reason, Number(d.dataset.count)]);")
    assert counts == [[CPU_MISS, 80], [SELECTOR_MISS, 40]]
    browser.save_screenshot(str(tmp_path / "static-overview.png"))
