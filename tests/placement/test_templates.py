"""The placement templates render to objects the Kubernetes schema accepts (kubernetes-validate, strict)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from labdef.lab import with_changes
from labkit.paths import PROJECT_ROOT
from labkit.placement.scenarios import SCENARIOS_FILE, PodDefaults, load_scenarios
from labkit.placement.session import MANAGED_BY, pod_image, render_namespace, render_pod
from tests.placement.standins import make_lab


@pytest.mark.parametrize("patch", [{}, {"metadata": {"annotations": {"example.com/net-preference": "high-speed"}}}])
def test_pod_template_is_a_valid_pod(patch):
    lab = make_lab()
    pod = render_pod(load_scenarios().pod, lab, "spread-1", "placement-abcde", "spread", lab.scheduler.name, patch)
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    assert pod["spec"]["schedulerName"] == "my-custom-scheduler"
    assert pod["metadata"].get("annotations", {}) == patch.get("metadata", {}).get("annotations", {})
    assert pod["metadata"]["labels"]["kubelab.io/placement-scenario"] == "spread"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}


@pytest.mark.parametrize("scenario", [s for s in load_scenarios(
    [SCENARIOS_FILE, *(PROJECT_ROOT / "plugins" / n / "scenarios.yaml" for n in ("network_aware", "least_loaded"))]
).scenarios if s.pods.patch], ids=lambda s: s.id)
def test_every_shipped_scenarios_patched_pod_is_a_valid_pod_selecting_its_own_scenario(scenario):
    lab = make_lab()
    pod = render_pod(load_scenarios().pod, lab, f"{scenario.id}-1", "placement-abcde", scenario.id,
                     lab.scheduler.name, scenario.pods.patch, priority_class="placement-abcde-priority-5")
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    selectors = [t["labelSelector"] for t in (pod["spec"].get("affinity", {}).get("podAntiAffinity", {})
                                             .get("requiredDuringSchedulingIgnoredDuringExecution", []))]
    selectors += [c["labelSelector"] for c in pod["spec"].get("topologySpreadConstraints", [])]
    for selector in selectors:
        assert selector == {"matchLabels": {"kubelab.io/placement-scenario": scenario.id}}


def test_a_patch_cannot_drop_the_runs_labels():
    lab = make_lab()
    patch = {"metadata": {"labels": {"kubelab.io/placement-scenario": None, "team": "a"}}}
    pod = render_pod(load_scenarios().pod, lab, "x-1", "placement-abcde", "x", lab.scheduler.name, patch)
    assert pod["metadata"]["labels"] == {**MANAGED_BY, "kubelab.io/placement-scenario": "x", "team": "a"}


def test_namespace_template_is_valid_and_generated():
    ns = render_namespace()
    kubernetes_validate.validate(ns, make_lab().kubernetes.version, strict=True)
    assert ns["metadata"]["generateName"] == "placement-"
    assert ns["metadata"]["labels"] == MANAGED_BY


@pytest.mark.parametrize(("version", "image"), [
    ("1.36.4", "registry.k8s.io/pause:3.10.2"),  # kubeadm 1.36's pause image, containerd's sandbox image
    ("1.35.0", "registry.k8s.io/pause:3.10.1"),
    ("1.38.0", "registry.k8s.io/pause:3.10.2"),  # newer than the version table: its newest known
])
def test_test_pods_run_the_sandbox_image_the_nodes_already_hold(version, image):
    lab = with_changes(make_lab(), {"kubernetes.version": version, "cni.calico_version": "v3.32.1"})
    assert pod_image(load_scenarios().pod, lab) == image
    assert pod_image(PodDefaults(image="example.org/other:1"), lab) == "example.org/other:1"
