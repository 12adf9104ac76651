"""The DRA benchmark's run at a tiny size: every pod bound, each claim allocated on its pod's node (the API
server's word), and the figures it reports present. No timing is asserted: the benchmark reports numbers."""

from __future__ import annotations

import pytest

from benchmarks import dra

pytestmark = pytest.mark.api


@pytest.mark.parametrize("devices", [0, 2])
def test_a_tiny_run_binds_every_pod_with_its_devices_on_its_node(devices: int) -> None:
    result = dra.run(nodes=3, per_node=2, pods=3, devices=devices, timeout=60)
    assert (result["bound"], result["claims_not_allocated_on_the_pods_node"]) == (3, 0)
    assert result["decisions_per_second"] is not None and result["scheduler_cpu_ms_per_pod"] is not None
