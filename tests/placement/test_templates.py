"""The placement templates render to objects the Kubernetes schema accepts (kubernetes-validate, strict)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from labkit.placement.scenarios import load_scenarios
from labkit.placement.session import MANAGED_BY, render_namespace, render_pod
from tests.placement.standins import make_lab


@pytest.mark.parametrize("annotations", [{}, {"example.com/net-preference": "high-speed"}])
def test_pod_template_is_a_valid_pod(annotations):
    lab = make_lab()
    pod = render_pod(load_scenarios().pod, "spread-1", "placement-abcde", "spread", annotations, lab.scheduler.name)
    kubernetes_validate.validate(pod, lab.kubernetes.version, strict=True)
    assert pod["spec"]["schedulerName"] == "my-custom-scheduler"
    assert pod["metadata"].get("annotations", {}) == annotations
    assert pod["metadata"]["labels"]["kubelab.io/placement-scenario"] == "spread"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}


def test_namespace_template_is_valid_and_generated():
    ns = render_namespace()
    kubernetes_validate.validate(ns, make_lab().kubernetes.version, strict=True)
    assert ns["metadata"]["generateName"] == "placement-"
    assert ns["metadata"]["labels"] == MANAGED_BY
