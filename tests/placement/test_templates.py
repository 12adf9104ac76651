"""The placement templates render to objects the Kubernetes schema accepts (kubernetes-validate, strict)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from labdef.lab import with_changes
from labkit.placement.scenarios import PodDefaults, Pods, load_scenarios
from labkit.placement.session import MANAGED_BY, pod_image, render_namespace, render_pod
from tests.placement.standins import make_lab


@pytest.mark.parametrize("annotations", [{}, {"example.com/net-preference": "high-speed"}])
def test_pod_template_is_a_valid_pod(annotations):
    lab = make_lab()
    pod = render_pod(load_scenarios().pod, lab, "spread-1", "placement-abcde", "spread", annotations,
                     lab.scheduler.name)
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    assert pod["spec"]["schedulerName"] == "my-custom-scheduler"
    assert pod["metadata"].get("annotations", {}) == annotations
    assert pod["metadata"]["labels"]["kubelab.io/placement-scenario"] == "spread"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}


def test_constrained_pods_are_valid_pods_selecting_their_own_scenario():
    lab = make_lab()
    pods = Pods(per_eligible_node=1, anti_affinity="required", topology_spread="DoNotSchedule")
    pod = render_pod(load_scenarios().pod, lab, "set-1", "placement-abcde", "set", {}, lab.scheduler.name, pods)
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    own = {"matchLabels": {"kubelab.io/placement-scenario": "set"}}
    [term] = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"labelSelector": own, "topologyKey": "kubernetes.io/hostname"}
    [spread] = pod["spec"]["topologySpreadConstraints"]
    assert spread == {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                      "labelSelector": own, "nodeTaintsPolicy": "Honor"}


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
