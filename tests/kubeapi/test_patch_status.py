"""PATCH flavours, the pods/status subresource and optimistic concurrency on update."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi_testserver.patches import merge_patch, strategic_merge_patch
from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def test_status_patch_merges_conditions_by_type(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    core_v1.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 3 Insufficient cpu."}]}})
    core_v1.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}})
    pod = core_v1.read_namespaced_pod("p1", "default")
    by_type = {c.type: c for c in pod.status.conditions}
    assert set(by_type) == {"PodScheduled", "Ready"}
    assert by_type["PodScheduled"].reason == "Unschedulable"
    assert by_type["PodScheduled"].message == "0/3 nodes are available: 3 Insufficient cpu."
    assert pod.status.phase == "Pending"  # untouched keys survive


def test_status_subresource_ignores_spec_and_main_resource_ignores_status(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    core_v1.patch_namespaced_pod_status("p1", "default", {"spec": {"nodeName": "sneaky"},
                                                          "status": {"phase": "Running"}})
    core_v1.patch_namespaced_pod("p1", "default", {"status": {"phase": "Failed"},
                                                   "metadata": {"labels": {"a": "b"}}})
    pod = kube_api.get_object("pods", "p1", "default")
    assert pod["spec"].get("nodeName") is None
    assert pod["status"]["phase"] == "Running"
    assert pod["metadata"]["labels"] == {"a": "b"}


def test_pod_spec_is_immutable_except_allowed_fields(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    with pytest.raises(client.ApiException) as info:
        core_v1.patch_namespaced_pod("p1", "default", {"spec": {"nodeName": "node-a"}})
    assert info.value.status == 422
    assert json.loads(info.value.body)["reason"] == "Invalid"
    core_v1.patch_namespaced_pod("p1", "default", {"spec": {"containers": [{"name": "pause", "image": "new:1"}]}})
    assert kube_api.get_object("pods", "p1", "default")["spec"]["containers"][0]["image"] == "new:1"


def test_merge_patch_removes_label_with_null(kube_api: KubeApiServer, kube_api_client):
    kube_api.add_node("n1", labels={"network-topology": "high-speed"})
    kube_api_client.call_api("/api/v1/nodes/n1", "PATCH", body={"metadata": {"labels": {"network-topology": None}}},
                             header_params={"Content-Type": "application/merge-patch+json"},
                             _preload_content=False)
    assert "network-topology" not in kube_api.get_object("nodes", "n1")["metadata"]["labels"]


def test_json_patch_add_and_failed_test_op(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("n1")
    core_v1.patch_node("n1", [{"op": "add", "path": "/metadata/labels/zone", "value": "z1"}])
    assert kube_api.get_object("nodes", "n1")["metadata"]["labels"]["zone"] == "z1"
    with pytest.raises(client.ApiException) as info:
        core_v1.patch_node("n1", [{"op": "test", "path": "/metadata/labels/zone", "value": "z2"}])
    assert info.value.status == 422


def test_noop_patch_keeps_resource_version(kube_api: KubeApiServer, core_v1):
    node = kube_api.add_node("n1", labels={"a": "1"})
    patched = core_v1.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    assert patched.metadata.resource_version == node["metadata"]["resourceVersion"]


def test_put_with_stale_resource_version_is_409(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("n1")
    fresh = core_v1.read_node("n1")
    kube_api.update_node("n1", {"metadata": {"labels": {"changed": "yes"}}})
    fresh.metadata.labels["mine"] = "x"
    with pytest.raises(client.ApiException) as info:
        core_v1.replace_node("n1", fresh)
    assert info.value.status == 409
    assert json.loads(info.value.body)["message"] == (
        'Operation cannot be fulfilled on nodes "n1": the object has been modified; please apply your changes '
        "to the latest version and try again")
    current = core_v1.read_node("n1")
    current.metadata.labels["mine"] = "x"
    assert core_v1.replace_node("n1", current).metadata.labels["mine"] == "x"


def test_patch_carrying_resource_version_is_a_precondition(kube_api: KubeApiServer, core_v1):
    node = kube_api.add_node("n1")
    kube_api.update_node("n1", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(client.ApiException) as info:
        core_v1.patch_node("n1", {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"],
                                               "labels": {"y": "2"}}})
    assert info.value.status == 409


def test_smp_directives_and_set_lists():
    pod = {"metadata": {"finalizers": ["a"]},
           "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}}
    out = strategic_merge_patch(pod, {"metadata": {"finalizers": ["b"]},
                                      "status": {"conditions": [{"type": "A", "$patch": "delete"}]}})
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert out["status"]["conditions"] == [{"type": "B", "status": "True"}]
    assert pod["status"]["conditions"][0] == {"type": "A", "status": "True"}  # input untouched
    replaced = strategic_merge_patch(pod, {"status": {"$patch": "replace", "phase": "Running"}})
    assert replaced["status"] == {"phase": "Running"}


def test_merge_patch_replaces_lists_whole():
    assert merge_patch({"l": [1, 2], "k": 1}, {"l": [3], "k": None}) == {"l": [3]}


def test_update_and_patch_may_not_rename(kube_api: KubeApiServer, core_v1):
    node = kube_api.add_node("n1")
    renamed = {**node, "metadata": {**node["metadata"], "name": "n2"}}
    with pytest.raises(client.ApiException) as put:
        core_v1.replace_node("n1", renamed)
    assert put.value.status == 400
    assert json.loads(put.value.body)["message"] == (
        "the name of the object (n2) does not match the name on the URL (n1)")
    with pytest.raises(client.ApiException) as patch:
        core_v1.patch_node("n1", {"metadata": {"name": "n2"}})
    assert patch.value.status == 400 and "(n2) does not match the name on the URL (n1)" in patch.value.body
    assert [n["metadata"]["name"] for n in kube_api.nodes()] == ["n1"]


def test_write_carrying_a_uid_never_lands_on_a_same_name_successor(kube_api: KubeApiServer, core_v1):
    """A status patch carrying the deleted pod's metadata.uid is refused by the successor (422: uid is
    immutable, as kube-apiserver's metadata validation answers a patch); a PUT with it is a failed UID
    precondition (409). The successor keeps its own status."""
    old = kube_api.add_pod("p1")
    kube_api.remove_pod("p1")
    new = kube_api.add_pod("p1")
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "stale"}
    with pytest.raises(client.ApiException) as patch:
        core_v1.patch_namespaced_pod_status("p1", "default", {"metadata": {"uid": old["metadata"]["uid"]},
                                                               "status": {"conditions": [condition]}})
    status = json.loads(patch.value.body)
    assert patch.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"] == (f'Pod "p1" is invalid: metadata.uid: Invalid value: "{old["metadata"]["uid"]}": '
                                 "field is immutable")
    replaced = {**new, "metadata": {**new["metadata"], "uid": old["metadata"]["uid"]}}
    with pytest.raises(client.ApiException) as put:
        core_v1.replace_namespaced_pod_status("p1", "default", replaced)
    assert put.value.status == 409 and "Precondition failed: UID in precondition" in json.loads(put.value.body)["message"]
    assert not (kube_api.get_object("pods", "p1", "default")["status"].get("conditions") or [])
    # The right uid is no obstacle.
    core_v1.patch_namespaced_pod_status("p1", "default", {"metadata": {"uid": new["metadata"]["uid"]},
                                                           "status": {"conditions": [condition]}})
    assert kube_api.get_object("pods", "p1", "default")["status"]["conditions"][0]["message"] == "stale"


def test_condition_patch_lands_on_a_bound_pod(kube_api: KubeApiServer, core_v1):
    """The binding writes PodScheduled=True with a null lastProbeTime; a later status patch of that
    condition (the patch drops the null field) is applied, not answered 500."""
    kube_api.add_pod("p1")
    core_v1.create_namespaced_pod_binding("p1", "default", {"metadata": {"name": "p1"}, "target": {"name": "n"}},
                                          _preload_content=False)
    core_v1.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": None}]}})
    assert kube_api.get_object("pods", "p1", "default")["status"]["conditions"][0]["status"] == "False"
