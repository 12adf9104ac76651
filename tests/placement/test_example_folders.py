"""The gang and quota example folders (examples/coscheduling, examples/quota) hold what a plugin folder ships:
scenario files test-placement accepts, naming plugins the folder declares, and (coscheduling) a PodGroup CRD
that is a valid CustomResourceDefinition for the lab's Kubernetes version and serves the kind the plugin
watches."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit.paths import PROJECT_ROOT
from labkit.placement.scenarios import load_scenarios
from scheduler.framework import Resource, load_registry

FOLDERS = {"coscheduling": {"Coscheduling"}, "quota": {"NamespaceQuota"}}


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_scenarios_parse_and_name_the_folders_plugins(name):
    folder = PROJECT_ROOT / "examples" / name
    declared = set(load_registry([str(folder)], entry_points=False)) - set(load_registry(entry_points=False))
    assert declared == FOLDERS[name]
    scenarios = load_scenarios([folder / "scenarios.yaml"]).scenarios
    assert scenarios
    for scenario in scenarios:
        assert set(scenario.requires.plugins) <= declared, scenario.id


def test_the_podgroup_crd_is_valid_and_serves_what_coscheduling_watches():
    folder = PROJECT_ROOT / "examples" / "coscheduling"
    crd = yaml.safe_load((folder / "crds" / "podgroup.yaml").read_text())
    kubernetes_validate.validate(crd, load_lab(DEFAULT_LAB_FILE).kubernetes.version, strict=True)
    [plugin] = [p for p in load_registry([str(folder)], entry_points=False).values() if p.name == "Coscheduling"]
    served = {str(Resource(crd["spec"]["group"], v["name"], crd["spec"]["names"]["plural"]))
              for v in crd["spec"]["versions"] if v["served"]}
    assert "scheduling.x-k8s.io/v1alpha1/podgroups" in served
    assert served & set(plugin.watches)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {"minMember", "scheduleTimeoutSeconds"} <= set(spec)
