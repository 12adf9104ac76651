"""resource.k8s.io/v1 (Dynamic Resource Allocation) as kube-apiserver serves it: ResourceSlices and DeviceClasses
cluster-scoped, ResourceClaims namespaced with a status subresource (the scheduler writes an allocation there),
read and written through the official Python client to prove the shapes. No DRA driver and no resourceclaim
controller run in the test server."""

from __future__ import annotations

from kubernetes import client

from kubeapi_testserver.server import KubeApiServer

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpu"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}]}}
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": [{"name": "r0", "exactly": {"deviceClassName": "gpu"}}]}},
         "status": {"reservedFor": [{"resource": "pods", "name": "someone", "uid": "u"}]}}
ALLOCATION = {"devices": {"results": [{"request": "r0", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]},
              "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                  {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}


def test_slices_and_classes_are_cluster_scoped_and_claims_namespaced(kube_api: KubeApiServer,
                                                                    kube_api_client: client.ApiClient) -> None:
    resource = client.ResourceV1Api(kube_api_client)
    resource.create_resource_slice(SLICE)
    resource.create_device_class(CLASS)
    made = resource.create_namespaced_resource_claim("default", CLAIM)
    assert made.status.reserved_for is None  # a client's status is dropped at create
    assert [s.metadata.name for s in resource.list_resource_slice().items] == ["n1-gpu"]
    assert resource.read_device_class("gpu").spec.selectors[0].cel.expression == 'device.driver == "gpu.example.com"'
    assert [c.metadata.name for c in resource.list_resource_claim_for_all_namespaces().items] == ["c"]
    assert resource.list_namespaced_resource_claim("other").items == []


def test_claim_status_is_written_through_its_subresource_only(kube_api: KubeApiServer,
                                                             kube_api_client: client.ApiClient) -> None:
    resource = client.ResourceV1Api(kube_api_client)
    resource.create_namespaced_resource_claim("default", {k: v for k, v in CLAIM.items() if k != "status"})
    written = resource.patch_namespaced_resource_claim_status("c", "default", {"status": {
        "allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}})
    assert written.status.allocation.devices.results[0].device == "gpu-0"
    resource.patch_namespaced_resource_claim("c", "default", {
        "metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}, "status": {"reservedFor": None}})
    stored = kube_api.get_object("resourceclaims", "c", "default")
    assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert stored["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "u1"}]  # not through /status
