"""docs/writing-a-gang-scheduler.md, run as written: its files (the plugin shown in pieces, reassembled in order)
are examples/coscheduling's, byte for byte; in a folder outside the repository (the user's ~/my-lab) the
example's own unit tests pass through whole cycles and the contract check passes; `deploy-scheduler
--render-only` with the tutorial's lab entry writes the PodGroup CRD, RBAC for podgroups and the profile, refuses
the entry without its queueSort line and refuses it in extender mode, each as the tutorial shows (the unit tier);
then test-placement with the tutorial's scenario file passes against the API test server with the real
scheduler process in standalone mode, on a lab shaped like the default one (a tainted control plane and one
worker), and the too-big gang's scenario misses without the plugin (the API tier). Stand-ins as in
test_writing_a_plugin.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from labkit.paths import PROJECT_ROOT
from tests.tutorial.steps import MyLab, Tutorial, default_lab, deployed, render_only, run

TUTORIAL = Tutorial(PROJECT_ROOT / "docs" / "writing-a-gang-scheduler.md")
EXAMPLE = PROJECT_ROOT / "examples" / "coscheduling"
FILES = {"coscheduling/__init__.py", "coscheduling/test_coscheduling.py", "coscheduling/crds/podgroup.yaml",
         "coscheduling/scenarios.yaml"}
PODGROUPS_RULE = {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]}


def words(text: str) -> str:
    """Text with its line breaks and indentation folded (the CLI wraps to the terminal, the docs to 117)."""
    return " ".join(text.split())


def shown_output(containing: str) -> str:
    """The tutorial's ```text block that contains ``containing``, without a trailing '...' line."""
    blocks = [b for b in re.findall(r"```text\n(.*?)```", TUTORIAL.markdown.read_text(), re.DOTALL)
              if containing in b]
    assert len(blocks) == 1, f"{len(blocks)} text blocks with {containing!r}"
    return "\n".join(line for line in blocks[0].splitlines() if line.strip() != "...")


@pytest.fixture
def my_lab(tmp_path: Path) -> MyLab:
    """Steps 1 and 5: ~/my-lab with kubelab's lab.yaml copied and the tutorial's entry in it."""
    return TUTORIAL.write_my_lab(tmp_path, default_lab())


def test_the_tutorials_files_are_the_finished_example():
    """examples/coscheduling is what the tutorial builds, file for file, and the tutorial shows all of it."""
    assert set(TUTORIAL.files()) == FILES
    shipped = {f"coscheduling/{p.relative_to(EXAMPLE)}" for p in EXAMPLE.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == FILES
    assert TUTORIAL.differences(EXAMPLE) == []


def test_a_piece_that_differs_from_the_example_is_found(tmp_path: Path):
    """The plugin is shown in pieces: one changed line, or one piece left out, makes the file differ."""
    text = TUTORIAL.markdown.read_text()
    changed = tmp_path / "changed.md"
    changed.write_text(text.replace("        return None  # nothing to count", "        return  # nothing to count", 1))
    assert Tutorial(changed).differences(EXAMPLE) == [
        "coscheduling/__init__.py differs from examples/coscheduling/__init__.py"]
    pieces = list(re.finditer(r"<!-- file: coscheduling/__init__.py -->\n```python\n.*?```\n", text, re.DOTALL))
    assert len(pieces) > 5
    missing = tmp_path / "missing.md"
    missing.write_text(text[:pieces[3].start()] + text[pieces[3].end():])
    assert Tutorial(missing).differences(EXAMPLE) == [
        "coscheduling/__init__.py differs from examples/coscheduling/__init__.py"]


def test_step_4_the_examples_unit_tests_and_the_contract_check_pass(my_lab: MyLab):
    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "coscheduling"], my_lab.folder)
    assert tests.returncode == 0 and "12 passed" in tests.stdout, tests.stdout + tests.stderr
    check = run([sys.executable, "-m", "scheduler.testing", "check", str(my_lab.folder / "coscheduling")],
                PROJECT_ROOT)
    assert check.returncode == 0 and "ok   Coscheduling" in check.stdout, check.stdout + check.stderr


def test_step_5_render_only_writes_the_crd_the_access_and_the_profile(my_lab: MyLab, tmp_path: Path):
    out = tmp_path / "rendered"
    proc = render_only(my_lab, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [crd] = yaml.safe_load_all((out / "00-plugin-manifests.yaml").read_text())
    assert crd == yaml.safe_load((EXAMPLE / "crds" / "podgroup.yaml").read_text())
    rbac = (out / "02-rbac.yaml").read_text()
    [role] = [d for d in yaml.safe_load_all(rbac) if d["kind"] == "ClusterRole"]
    assert PODGROUPS_RULE in role["rules"]
    assert "# Coscheduling: watched" in rbac
    configmap = yaml.safe_load((out / "03-configmap.yaml").read_text())
    profile = yaml.safe_load(configmap["data"]["config.yaml"])["profiles"][0]
    assert profile["plugins"]["multiPoint"]["enabled"] == [{"name": "Coscheduling"}]
    assert profile["plugins"]["queueSort"] == {"disabled": [{"name": "PrioritySort"}]}
    assert {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 0}} \
        in profile["pluginConfig"]
    deployment = yaml.safe_load((out / "04-deployment.yaml").read_text())
    assert "--plugins=/opt/kubelab/plugins/coscheduling" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_step_5_without_the_queue_sort_line_the_entry_is_refused_as_shown(my_lab: MyLab, tmp_path: Path):
    lab = yaml.safe_load(my_lab.lab_file.read_text())
    del lab["scheduler"]["profile"]["plugins"]["queueSort"]
    my_lab.lab_file.write_text(yaml.safe_dump(lab, sort_keys=False))
    proc = render_only(my_lab, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words(shown_output("one queue sort plugin required")) in words(proc.stderr), proc.stderr
    assert not (tmp_path / "out").exists()


def test_step_8_extender_mode_is_refused_as_shown(my_lab: MyLab, tmp_path: Path):
    lab = yaml.safe_load(my_lab.lab_file.read_text())
    lab["scheduler"]["mode"] = "extender"
    my_lab.lab_file.write_text(yaml.safe_dump(lab, sort_keys=False))
    proc = render_only(my_lab, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words(shown_output("extender protocol")) in words(proc.stderr), proc.stderr
    for point in ("PreEnqueue", "QueueSort", "PostFilter", "Reserve", "Permit"):
        assert f"plugin Coscheduling runs at {point}, which" in words(proc.stderr), point
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ API tier


@pytest.fixture
def placement_lab(cluster) -> MyLab:
    """~/my-lab for a placement cluster shaped like the default lab.yaml: the control plane (NoSchedule) and
    one worker (the placement cluster's second worker removed), with the tutorial's entry."""
    from tests.placement.standins import WORKERS, lab_data

    cluster.server.remove_pod(f"kube-proxy-{WORKERS[1]}", "kube-system")
    cluster.server.remove_node(WORKERS[1])
    data = lab_data()
    data["nodes"] = [node for node in data["nodes"] if node["name"] != WORKERS[1]]
    return TUTORIAL.write_my_lab(cluster.workdir, data)


def worker_labels(cluster) -> dict[str, dict[str, str]]:
    return {name: labels for name, labels in cluster.node_labels().items()
            if "node-role.kubernetes.io/control-plane" not in labels}


@pytest.mark.api
def test_step_7_test_placement_proves_the_gang(cluster, placement_lab: MyLab):
    """`./lab test-placement --lab ~/my-lab/lab.yaml --scenarios ~/my-lab/coscheduling/scenarios.yaml` passes on
    a lab with one worker; afterwards no PodGroup is left and the worker's label is gone."""
    before = worker_labels(cluster)
    assert len(before) == 1
    with deployed(cluster, placement_lab, "standalone"):
        scenarios = str(placement_lab.folder / "coscheduling" / "scenarios.yaml")
        code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "30",
                                        lab_file=placement_lab.lab_file)
    results = {r["scenario"]: r for r in report["results"]}
    assert code == 0, (report.get("problem"), {s: (r["verdict"], r.get("reason")) for s, r in results.items()})
    assert {s: r["verdict"] for s, r in results.items()} == {
        "gang-fits": "pass", "gang-too-big": "pass", "coscheduling-plain-pods": "pass",
        "coscheduling-group-missing": "pass"}
    assert report["mode"] == "standalone"
    assert results["gang-fits"]["reason"].startswith("gang-fits: 3 bound (")
    assert results["gang-too-big"]["reason"].startswith("none of 2 bound after 15 s: ")
    # the held member let go: when the other one fits nowhere, or at the group's timeout, whichever comes first
    assert re.search(r"PodGroup placement-\w+/big-trainer rejected: member gang-too-big-2 cannot be placed"
                     r"|rejected due to timeout after waiting 5s at plugin Coscheduling",
                     results["gang-too-big"]["reason"]), results["gang-too-big"]["reason"]
    assert cluster.server.list_objects("podgroups.scheduling.x-k8s.io") == []
    assert worker_labels(cluster) == before


@pytest.mark.api
def test_step_7_without_the_plugin_the_too_big_gang_is_half_bound(cluster, placement_lab: MyLab):
    """The same scenario, its `requires` dropped, with kube-scheduler's default plugins only (the folder still
    brings the CRD): the member that fits is bound, so the scenario misses. It tests the gang, not the lab."""
    lab = yaml.safe_load(placement_lab.lab_file.read_text())
    lab["scheduler"]["profile"] = {}
    placement_lab.lab_file.write_text(yaml.safe_dump(lab, sort_keys=False))
    data = yaml.safe_load((placement_lab.folder / "coscheduling" / "scenarios.yaml").read_text())
    [scenario] = [s for s in data["scenarios"] if s["id"] == "gang-too-big"]
    del scenario["requires"]
    without = placement_lab.folder / "without-plugin.yaml"
    without.write_text(yaml.safe_dump({"scenarios": [scenario]}, sort_keys=False))
    with deployed(cluster, placement_lab, "standalone"):
        code, report = cluster.run_json("--scenarios", str(without), "--timeout", "30",
                                        lab_file=placement_lab.lab_file)
    [result] = report["results"]
    assert code == 1 and result["verdict"] == "miss", report
    assert result["reason"].startswith("1 of 2 pods bound within 15 s: gang-too-big-"), result["reason"]
