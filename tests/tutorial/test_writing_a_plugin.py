"""docs/writing-a-plugin.md, run as written: its files land in a folder outside the repository (the user's
~/my-lab), its lab entry is applied to a copy of the lab definition, and its steps run: the plugin's own unit
tests with the shipped helpers, the contract check, `deploy-scheduler --render-only` (the unit tier), then
test-placement with the tutorial's scenario file against the API test server, with the real scheduler process in
standalone mode and the real extender process in extender mode (the API tier).

Stand-ins in the API tier (tests/placement/standins.py, extender_driver.py): the API test server for
kube-apiserver, the scheduler process started from the rendered ConfigMap with the plugin folder where the image
would hold it, and in extender mode a test driver in kube-scheduler's place (no kube-scheduler binary here).
The image build with the folder in it is the image tier's (tests/image)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from labkit.paths import PROJECT_ROOT
from tests.tutorial.steps import MyLab, Tutorial, default_lab, deployed, render_only, run

TUTORIAL = Tutorial(PROJECT_ROOT / "docs" / "writing-a-plugin.md")
EXAMPLE = PROJECT_ROOT / "examples" / "node_cost"


@pytest.fixture
def my_lab(tmp_path: Path) -> MyLab:
    """Step 1 and 4: ~/my-lab with kubelab's lab.yaml copied and the tutorial's entry in it."""
    return TUTORIAL.write_my_lab(tmp_path, default_lab())


def test_the_tutorials_files_are_the_finished_example():
    """examples/node_cost is what the tutorial builds, file for file."""
    assert set(TUTORIAL.files()) == {"node_cost/__init__.py", "node_cost/test_node_cost.py",
                                     "node_cost/scenarios.yaml"}
    assert TUTORIAL.differences(EXAMPLE) == []


def test_step_3_the_plugins_unit_tests_pass_with_the_shipped_helpers(my_lab: MyLab):
    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "node_cost"], my_lab.folder)
    assert tests.returncode == 0 and "5 passed" in tests.stdout, tests.stdout + tests.stderr
    check = run([sys.executable, "-m", "scheduler.testing", "check", str(my_lab.folder / "node_cost")], PROJECT_ROOT)
    assert check.returncode == 0 and "ok   NodeCost" in check.stdout, check.stdout + check.stderr


def test_step_4_the_lab_ships_the_plugin_and_enables_it(my_lab: MyLab, tmp_path: Path):
    """`./lab deploy-scheduler --lab ~/my-lab/lab.yaml --render-only DIR`: the profile enables NodeCost with the
    tutorial's args and weight, and the scheduler is started with the folder the image holds."""
    out = tmp_path / "rendered"
    proc = render_only(my_lab, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    configmap = yaml.safe_load((out / "03-configmap.yaml").read_text())
    profile = yaml.safe_load(configmap["data"]["config.yaml"])["profiles"][0]
    assert {"name": "NodeCost", "weight": 2} in profile["plugins"]["multiPoint"]["enabled"]
    assert {"name": "NodeCost", "args": {"costAnnotation": "example.com/hourly-cost",
                                         "maxCostAnnotation": "example.com/max-hourly-cost"}} in profile["pluginConfig"]
    deployment = yaml.safe_load((out / "04-deployment.yaml").read_text())
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--plugins=/opt/kubelab/plugins/node_cost" in args, args


def test_step_4_a_mistake_in_the_entry_is_refused_by_its_field(my_lab: MyLab, tmp_path: Path):
    lab = yaml.safe_load(my_lab.lab_file.read_text())
    lab["scheduler"]["profile"]["pluginConfig"][0]["args"]["costAnnotaton"] = "typo"
    my_lab.lab_file.write_text(yaml.safe_dump(lab, sort_keys=False))
    proc = render_only(my_lab, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "costAnnotaton" in " ".join(proc.stderr.split()), proc.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ API tier


@pytest.fixture
def placement_lab(cluster) -> MyLab:
    """~/my-lab for the placement cluster: its nodes (tests/placement/standins.lab_data) with the tutorial's
    entry, as the user's copy of lab.yaml with the entry would be for that cluster."""
    from tests.placement.standins import lab_data

    return TUTORIAL.write_my_lab(cluster.workdir, lab_data())


@pytest.mark.api
@pytest.mark.parametrize("mode", ["standalone", "extender"])
def test_step_6_and_7_test_placement_proves_the_plugin(cluster, placement_lab: MyLab, mode: str):
    """`./lab test-placement --lab ~/my-lab/lab.yaml --scenarios ~/my-lab/node_cost/scenarios.yaml` passes, and
    each node's annotation is back as it was. In extender mode only the scenario a pod is bound in: the test
    driver standing in for kube-scheduler writes FailedScheduling in a form of its own, not kube-scheduler's
    "0/N nodes are available" that a pending expectation checks."""
    expected = {"node-cost-within-cap": "pass", "node-cost-over-cap": "pass"}
    if mode == "extender":
        del expected["node-cost-over-cap"]
    with deployed(cluster, placement_lab, mode):
        scenarios = str(placement_lab.folder / "node_cost" / "scenarios.yaml")
        only = [arg for scenario in expected for arg in ("--only", scenario)]
        code, report = cluster.run_json("--scenarios", scenarios, *only, "--timeout", "30",
                                        lab_file=placement_lab.lab_file)
        verdicts = {r["scenario"]: (r["verdict"], r.get("reason")) for r in report["results"]}
        assert code == 0, (report.get("problem"), verdicts)
        assert {scenario: verdict for scenario, (verdict, _) in verdicts.items()} == expected
        assert report["mode"] == mode
        for node in cluster.server.nodes():
            assert "example.com/hourly-cost" not in (node["metadata"].get("annotations") or {})
