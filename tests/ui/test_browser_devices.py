"""DRA devices on the placement page, in a real browser (headless Chromium from Debian) against the API test
server with the real scheduler process: the example driver's ResourceSlices and DeviceClass are published as
it would (tests/placement/dra_driver.py), a pod claiming two GPUs is bound by the scheduler, and the page shows
the node's devices with the claim and pod holding each, colours the grid by devices in use, and explains the
pod with the devices its claim holds. Saves a screenshot (docs/images/ui-devices.png with KUBELAB_DOCS_WRITE=1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver.objects import make_pod
from tests.placement.conftest import Cluster
from tests.placement.dra_driver import publish
from tests.placement.standins import CONTROL_PLANE, WORKERS, DeploymentStandIn, make_lab
from tests.ui.conftest import wait_for_page
from tests.ui.test_browser import SCHEDULER, _bound_node, _open, _select_node

pytestmark = [pytest.mark.browser]

DEVICES = 2  # per worker


@pytest.fixture
def gpus(cluster: Cluster) -> Cluster:
    """Two GPUs on each worker, none on the control plane, as the example driver publishes them."""
    publish(cluster.server, make_lab(), WORKERS, DEVICES)
    return cluster


def test_a_nodes_devices_and_their_claims_are_shown(gpus: Cluster, deployed: DeploymentStandIn, ui_url: str,
                                                    browser: Any, screenshots: Path) -> None:
    server = gpus.server
    server.create_object("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "two-gpus", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]}}})
    pod = make_pod("trainer", "default", scheduler_name=SCHEDULER, cpu="10m")
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "two-gpus"}]
    server.add_pod(pod)
    node = server.wait_for(lambda: _bound_node(server, "trainer"))
    other = next(w for w in WORKERS if w != node)
    _open(browser, ui_url)
    # the node's devices: each with its claim and the pod the claim is reserved for
    _select_node(browser, node)
    row = f"#node-detail .kv-devices tr[data-device=\"gpu.example.com/{node}/gpu-0\"]"
    wait_for_page(browser, f"document.querySelector('{row}')?.dataset.claim === 'default/two-gpus'")
    assert "default/trainer" in browser.execute_script(f"return document.querySelector('{row}').textContent")
    assert "model=LATEST-GPU-MODEL" in browser.execute_script(f"return document.querySelector('{row}').textContent")
    _select_node(browser, other)
    wait_for_page(browser, f"document.querySelector('#node-detail .kv-devices tr[data-device=\"gpu.example.com/{other}/gpu-1\"]')"
                   "?.dataset.claim === ''")
    _select_node(browser, CONTROL_PLANE)
    assert browser.execute_script("return document.querySelector('#node-detail .kv-devices')") is None
    # the grid coloured by devices in use: the pod's node full, the other worker empty
    wait_for_page(browser, "document.querySelector('#resource option[value=\"devices\"]')")
    browser.execute_script("const s = document.getElementById('resource'); s.value = 'devices';"
                           "s.dispatchEvent(new Event('change'));")
    wait_for_page(browser, f"document.querySelector('#grid [data-cell=\"{node}\"]').dataset.share === '1.000'")
    assert browser.execute_script(f"return document.querySelector('#grid [data-cell=\"{other}\"]').dataset.share") \
        == "0.000"
    assert "DRA devices held by claims" in browser.execute_script("return document.getElementById('legend').textContent")
    # the pod explained: the devices its claim holds, and each node's devices (kubelab's detail)
    _select_node(browser, node)
    wait_for_page(browser, "document.querySelector('#node-detail button[data-pod=\"default/trainer\"]')").click()
    claim = "#explain-devices .claim[data-claim=\"default/two-gpus\"]"
    wait_for_page(browser, f"document.querySelector('{claim}')?.dataset.allocated === 'true'")
    text = browser.execute_script(f"return document.querySelector('{claim}').textContent")
    assert text == f"claim default/two-gpus holds gpu.example.com/{node}/gpu-0, gpu.example.com/{node}/gpu-1"
    lines = browser.execute_script("return [...document.querySelectorAll('#explain-devices .device-node')]"
                                   ".map((e) => e.textContent)")
    assert f"{node}: gpu.example.com: 2 devices, 2 held by claim default/two-gpus" in lines
    browser.save_screenshot(str(screenshots / "ui-devices.png"))
