"""The quota plugin of examples/quota as a lab ships it (its folder and profile, deploy-scheduler's ConfigMap, the
real scheduler process: tests/placement/standins.py), proven by its own scenario file through test-placement
against the API test server: a namespace without a quota is not limited, one with a quota of two pods gets two
of four bound and the others Pending with the quota's reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from labdef.lab import parse_lab
from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster
from tests.placement.standins import DeploymentStandIn, deploy_scheduler, lab_data

pytestmark = pytest.mark.api

EXAMPLE = PROJECT_ROOT / "examples" / "quota"


@pytest.fixture
def quota_cluster(cluster: Cluster) -> Iterator[Cluster]:
    data = lab_data()
    data["scheduler"]["plugins"] = [str(EXAMPLE)]
    data["scheduler"]["profile"] = {"plugins": {"multiPoint": {"enabled": [{"name": "NamespaceQuota"}]}}}
    cluster.lab_file.write_text(yaml.safe_dump(data, sort_keys=False))
    lab = parse_lab(data, "quota lab")
    deploy_scheduler(cluster.server, lab)
    with DeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir):
        yield cluster


def test_the_quota_folders_scenarios_pass(quota_cluster: Any) -> None:
    code, report = quota_cluster.run_json("--scenarios", str(EXAMPLE / "scenarios.yaml"), "--timeout", "60")
    verdicts = {r["scenario"]: r["verdict"] for r in report["results"]}
    assert verdicts == {"quota-namespace-without-limits": "pass", "quota-two-pods-of-four": "pass"}, report
    assert code == 0
