"""The DRA lab's placement scenario: a pod claiming two of the example driver's GPUs through a ResourceClaim,
valid for the lab's Kubernetes version, run after the built-in scenarios only in a DRA lab."""

from __future__ import annotations

import copy
from pathlib import Path

import kubernetes_validate

from labdef.lab import with_changes
from labkit.placement.options import PlacementOptions
from labkit.placement.runner import scenario_files
from labkit.placement.scenarios import DRA_SCENARIOS_FILE, SCENARIOS_FILE, load_scenarios
from labkit.placement.session import render_pod
from tests.placement.standins import make_lab


def test_the_claim_and_the_pod_are_valid_and_name_each_other():
    lab = make_lab()
    scenarios = load_scenarios([DRA_SCENARIOS_FILE])
    (scenario,) = scenarios.scenarios
    pod = render_pod(scenarios.pod, lab, f"{scenario.id}-1", "placement-abcde", scenario.id, lab.scheduler.name,
                     scenario.pods.patch)
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    (claim,) = copy.deepcopy(scenario.objects)
    claim["metadata"]["namespace"] = "placement-abcde"
    kubernetes_validate.validate(claim, lab.kubernetes.version, strict=True)
    (request,) = claim["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]
    assert scenario.expect.bound.nodes.role == "worker"


def test_a_dra_lab_runs_them_after_the_built_in_ones():
    lab = make_lab()
    options = PlacementOptions(kubeconfig=Path("kubeconfig"))
    assert DRA_SCENARIOS_FILE not in scenario_files(lab, options)
    dra_lab = with_changes(lab, {"dra.example_driver": True})
    assert scenario_files(dra_lab, options)[:2] == [SCENARIOS_FILE, DRA_SCENARIOS_FILE]
