"""Pods with DRA ResourceClaims end to end: the scheduler over HTTP against the Kubernetes API test server
(kubeapi_testserver, a stand-in for kube-apiserver), which serves resource.k8s.io/v1. No DRA driver runs there:
the test publishes the ResourceSlices a driver would, and creates the claims directly."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler_api.harness import our_pod, pod_events, running_scheduler

pytestmark = pytest.mark.api

FINALIZER = "resource.kubernetes.io/delete-protection"


def gpu_slice(node: str, devices: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                                 for i in range(devices)]}}


def gpu_class() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def claim(name: str, count: int, device_class: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r0", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}}


def claiming_pod(name: str, claim_name: str) -> dict[str, Any]:
    return our_pod(name, resourceClaims=[{"name": "c0", "resourceClaimName": claim_name}],
                   container={"resources": {"claims": [{"name": "c0"}]}})


def test_pod_with_a_claim_is_bound_and_its_claim_allocated(kube_api, kube_api_kubeconfig) -> None:
    """Two pods each claiming two of the three GPUs of n1 (n2 has none): the first is bound to n1 with its
    claim allocated (devices, the node, the pod in reservedFor, the finalizer), the second fits nowhere."""
    kube_api.add_node("n1")
    kube_api.add_node("n2")
    kube_api.create_object("resourceslices", gpu_slice("n1", 3))
    kube_api.create_object("deviceclasses", gpu_class())
    kube_api.create_object("resourceclaims", claim("first", 2))
    kube_api.create_object("resourceclaims", claim("second", 2))
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod(claiming_pod("a", "first"))
        kube_api.wait_for(lambda: kube_api.bound_pods() == {"default/a": "n1"}, timeout=10)
        allocated = kube_api.get_object("resourceclaims", "first", "default")
        assert FINALIZER in allocated["metadata"]["finalizers"]
        allocation = allocated["status"]["allocation"]
        assert allocation["devices"]["results"] == [
            {"request": "r0", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
            {"request": "r0", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"}]
        assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
        pod_uid = kube_api.get_object("pods", "a", "default")["metadata"]["uid"]
        assert allocated["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": pod_uid}]
        kube_api.add_pod(claiming_pod("b", "second"))
        kube_api.wait_for(lambda: pod_events(kube_api, "b", "FailedScheduling"), timeout=10)
        assert pod_events(kube_api, "b", "FailedScheduling")[0]["message"] == (
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
        assert "allocation" not in kube_api.get_object("resourceclaims", "second", "default")["status"]
