"""test-placement in extender mode, against the API test server, with the real extender process and a test
driver in kube-scheduler's place (tests/placement/extender_driver.py: there is no kube-scheduler binary
here, and the driver runs none of kube-scheduler's plugins). The report says which mode ran; a miss is
explained with the extender's own per-node verdicts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from labdef.lab import Lab, parse_lab
from tests.placement.conftest import Cluster, by_scenario
from tests.placement.extender_driver import ExtenderDeploymentStandIn
from tests.placement.standins import CONTROL_PLANE, WORKERS, deploy_scheduler, lab_data, network_scenarios

pytestmark = pytest.mark.api

NETWORK_REASON = "NetworkAware: node(s) didn't have label network-topology=high-speed"


def extender_lab_file(path: Path, **kwargs: object) -> Path:
    data = lab_data(**kwargs)  # type: ignore[arg-type]
    data["scheduler"]["mode"] = "extender"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def extender(cluster: Cluster) -> Iterator[ExtenderDeploymentStandIn]:
    """Extender mode deployed from the lab definition, the real extender running."""
    lab_file = extender_lab_file(cluster.lab_file)
    lab: Lab = parse_lab(yaml.safe_load(lab_file.read_text()), "test lab")
    deploy_scheduler(cluster.server, lab)
    with ExtenderDeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir) as standin:
        yield standin


def test_high_speed_scenario_passes_in_extender_mode_and_says_so(cluster: Cluster,
                                                                  extender: ExtenderDeploymentStandIn) -> None:
    code, report = cluster.run_json("--only", "high-speed", "--timeout", "30")
    assert code == 0, (report, extender.log())
    assert report["mode"] == "extender"
    assert report["config_source"] == "ConfigMap kube-system/my-custom-scheduler-config"
    assert by_scenario(report)["high-speed"]["pods"][0]["node"] == WORKERS[0]
    assert report["warnings"] == []
    proc = cluster.run("--only", "high-speed", "--timeout", "30")
    assert "placement: scheduler my-custom-scheduler (extender mode: kube-scheduler asking the extender)" in proc.stdout


def test_a_miss_in_extender_mode_shows_the_extenders_verdicts(cluster: Cluster,
                                                              extender: ExtenderDeploymentStandIn) -> None:
    """The lab and the user's scenario now say the label key is network-tier; the deployed extender filters on network-topology,
    so no node passes it: the explanation is the extender's, node by node."""
    wrong = extender_lab_file(cluster.workdir / "wrong-key.yaml",
                              network_aware={"annotationKey": "my-network-preference", "labelKey": "network-tier",
                                             "labelValue": "high-speed"})
    scenarios = str(network_scenarios(cluster.workdir / "network-tier.yaml", "network-tier", "high-speed"))
    code, report = cluster.run_json("--scenarios", scenarios, "--only", "high-speed", "--timeout", "10",
                                    lab_file=wrong)
    assert code == 1, (report, extender.log())
    result = by_scenario(report)["high-speed"]
    assert result["verdict"] == "miss"
    events = [e["message"] for e in result["pods"][0]["events"]]
    assert any(m.startswith("extender-test-driver (not kube-scheduler): no node passed") for m in events), events
    why = {n["node"]: n for n in result["explanation"]["nodes"]}
    assert set(why) == {CONTROL_PLANE, *WORKERS}
    for node in why.values():  # only the extender's plugins: no TaintToleration verdict on the control plane
        assert not node["fits"] and node["reasons"] == [NETWORK_REASON + " requested by pod annotation "
                                                        "my-network-preference"], node
    proc = cluster.run("--scenarios", scenarios, "--only", "high-speed", "--timeout", "10", lab_file=wrong)
    assert "why: placement-" in proc.stdout and "the extender's verdicts, computed here; scheduler" in proc.stdout
    assert "extender's verdict now: 0/3 nodes are available" in proc.stdout


def test_standalone_lab_against_an_extender_deployment_is_a_warning(cluster: Cluster,
                                                                     extender: ExtenderDeploymentStandIn) -> None:
    standalone = cluster.workdir / "standalone.yaml"
    standalone.write_text(yaml.safe_dump(lab_data(), sort_keys=False))
    _, report = cluster.run_json("--only", "high-speed", "--timeout", "30", lab_file=standalone)
    assert report["mode"] == "extender"
    assert any("is deployed in extender mode, but the lab definition says scheduler.mode: standalone" in w
               for w in report["warnings"]), report["warnings"]
