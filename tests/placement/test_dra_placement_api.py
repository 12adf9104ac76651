"""The DRA lab's placement scenarios end to end: `python -m labkit.placement --scenarios` with the DRA
scenario file, against the Kubernetes API test server (which serves resource.k8s.io/v1) and the real
scheduler process (tests/placement/standins.py). The example driver's ResourceSlices and DeviceClass are
published as it would (tests/placement/dra_driver.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from labkit.placement.scenarios import DRA_SCENARIOS_FILE
from tests.placement.conftest import Cluster, by_scenario
from tests.placement.dra_driver import publish
from tests.placement.standins import CONTROL_PLANE, WORKERS, DeploymentStandIn, make_lab

pytestmark = pytest.mark.api

DEVICES = 2  # per worker


def test_the_pod_claiming_two_gpus_is_bound_where_its_claim_is_allocated(cluster: Cluster,
                                                                          deployed: DeploymentStandIn) -> None:
    publish(cluster.server, make_lab(), WORKERS, DEVICES)
    code, report = cluster.run_json("--scenarios", str(DRA_SCENARIOS_FILE), "--keep", "--timeout", "30")
    assert code == 0, report
    result = by_scenario(report)["dra-two-gpus"]
    assert result["verdict"] == "pass", result
    (pod,) = result["pods"]
    assert pod["node"] in WORKERS
    (namespace,) = cluster.placement_namespaces()  # kept (--keep) for inspection
    claim = cluster.server.get_object("resourceclaims", "two-gpus", namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [
        ("gpu.example.com", pod["node"], "gpu-0"), ("gpu.example.com", pod["node"], "gpu-1")]
    assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        pod["node"]]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod["name"]]


def test_a_claim_no_node_has_enough_free_devices_for_stays_pending(cluster: Cluster, deployed: DeploymentStandIn,
                                                                   tmp_path: Path) -> None:
    """Each worker publishes 2 GPUs; a claim for 3 fits none: Pending with kube-scheduler's message."""
    publish(cluster.server, make_lab(), WORKERS, DEVICES)
    scenarios = yaml.safe_load(DRA_SCENARIOS_FILE.read_text())
    (scenario,) = scenarios["scenarios"]
    scenario["id"], scenario["title"] = "dra-three-gpus", "a pod claiming more GPUs than any worker has waits"
    scenario["objects"][0]["spec"]["devices"]["requests"][0]["exactly"]["count"] = DEVICES + 1
    scenario["expect"] = {"pending": {"reason": "cannot allocate all claims"}}
    path = tmp_path / "dra-short.yaml"
    path.write_text(yaml.safe_dump(scenarios))
    code, report = cluster.run_json("--scenarios", str(path), "--timeout", "30")
    assert code == 0, report
    result = by_scenario(report)["dra-three-gpus"]
    assert result["verdict"] == "pass", result
    (pod,) = result["pods"]
    assert pod["node"] is None
    failed = [e["message"] for e in pod["events"] if e["reason"] == "FailedScheduling"]
    assert failed[-1] == (
        f"0/{1 + len(WORKERS)} nodes are available: 1 node(s) had untolerated taint(s), {len(WORKERS)} cannot "
        f"allocate all claims. still not schedulable, preemption: 0/{1 + len(WORKERS)} nodes are available: "
        f"{1 + len(WORKERS)} Preemption is not helpful for scheduling."), failed
    assert CONTROL_PLANE not in str(failed)
