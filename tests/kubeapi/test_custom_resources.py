"""Custom resources: a CRD created in the server serves its kind as kube-apiserver's apiextensions server does
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/), through the
official client's ApiextensionsV1Api and CustomObjectsApi."""

from __future__ import annotations

import copy
import json
import threading

import pytest
from kubernetes import client, watch

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api

GROUP, PLURAL = "scheduling.x-k8s.io", "podgroups"

PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "podgroup", "kind": "PodGroup", "shortNames": ["pg"]},
        "versions": [
            {"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
             "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                 "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                 "spec": {"type": "object", "required": ["minMember"], "properties": {
                     "minMember": {"type": "integer", "minimum": 1},
                     "scheduleTimeoutSeconds": {"type": "integer"}}},
                 "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}},
            {"name": "v1beta1", "served": True, "storage": False,
             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        ]}}


def podgroup(name: str, min_member: object = 2, **spec: object) -> dict:
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": min_member, **spec}}


@pytest.fixture
def crds(kube_api_client) -> client.ApiextensionsV1Api:
    return client.ApiextensionsV1Api(kube_api_client)


@pytest.fixture
def custom(kube_api_client) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_api_client)


def test_a_kind_is_not_served_before_its_crd_and_is_once_created(kube_api: KubeApiServer, crds, custom):
    with pytest.raises(client.ApiException) as before:
        custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)
    assert before.value.status == 404
    created = crds.create_custom_resource_definition(PODGROUP_CRD)
    assert created.metadata.resource_version
    crd = crds.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
    assert {c.type: c.status for c in crd.status.conditions} == {"NamesAccepted": "True", "Established": "True"}
    assert crd.status.stored_versions == ["v1alpha1"] and crd.status.accepted_names.kind == "PodGroup"
    obj = custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("gang-a"))
    meta = obj["metadata"]
    assert meta["namespace"] == "default" and meta["uid"] and meta["generation"] == 1 and meta["resourceVersion"]
    listed = custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)
    assert listed["kind"] == "PodGroupList" and [i["metadata"]["name"] for i in listed["items"]] == ["gang-a"]
    assert custom.get_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "gang-a")["spec"] == {
        "minMember": 2}
    everywhere = custom.list_cluster_custom_object(GROUP, "v1alpha1", PLURAL)
    assert [i["metadata"]["name"] for i in everywhere["items"]] == ["gang-a"]


def test_discovery_lists_the_custom_kind(kube_api: KubeApiServer, crds, kube_api_client):
    crds.create_custom_resource_definition(PODGROUP_CRD)
    groups = client.ApisApi(kube_api_client).get_api_versions()
    ours = next(g for g in groups.groups if g.name == GROUP)
    assert [v.version for v in ours.versions] == ["v1alpha1", "v1beta1"]
    resources = client.CustomObjectsApi(kube_api_client).get_api_resources(GROUP, "v1alpha1")
    assert {(r.name, r.namespaced, r.kind) for r in resources.resources} == {
        ("podgroups", True, "PodGroup"), ("podgroups/status", True, "PodGroup")}


def test_update_patch_and_status_subresource(kube_api: KubeApiServer, crds, custom):
    crds.create_custom_resource_definition(PODGROUP_CRD)
    obj = custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("g"))
    stale = obj["metadata"]["resourceVersion"]
    obj["spec"]["minMember"] = 3
    obj["status"] = {"phase": "Running"}  # ignored on the main resource: status has its subresource
    updated = custom.replace_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "g", obj)
    assert updated["spec"]["minMember"] == 3 and "status" not in updated and updated["metadata"]["generation"] == 2
    with pytest.raises(client.ApiException) as conflict:
        custom.replace_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "g",
                                                {**obj, "metadata": {**obj["metadata"], "resourceVersion": stale}})
    assert conflict.value.status == 409
    patched = custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "g",
                                                    {"spec": {"scheduleTimeoutSeconds": 30}})
    assert patched["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 30}
    status = custom.patch_namespaced_custom_object_status(
        GROUP, "v1alpha1", "default", PLURAL, "g", {"status": {"phase": "Scheduled"}, "spec": {"minMember": 9}})
    assert status["status"] == {"phase": "Scheduled"} and status["spec"]["minMember"] == 3
    assert status["metadata"]["generation"] == patched["metadata"]["generation"]  # status is not the spec


def test_schema_validation_and_pruning(kube_api: KubeApiServer, crds, custom):
    crds.create_custom_resource_definition(PODGROUP_CRD)
    with pytest.raises(client.ApiException) as bad:
        custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("bad", "two"))
    body = json.loads(bad.value.body)
    assert bad.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('PodGroup.scheduling.x-k8s.io "bad" is invalid: spec.minMember: Invalid value: "two": '
                               'spec.minMember in body must be of type integer: "two"')
    with pytest.raises(client.ApiException) as missing:
        custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL,
                                               {**podgroup("m"), "spec": {}})
    assert json.loads(missing.value.body)["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.minMember"}]
    with pytest.raises(client.ApiException) as low:
        custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("low", 0))
    assert "should be greater than or equal to 1" in json.loads(low.value.body)["message"]
    assert custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)["items"] == []
    pruned = custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL,
                                                    podgroup("p", 2, unknownField="x"))
    assert pruned["spec"] == {"minMember": 2}  # undeclared fields are dropped, as kube-apiserver prunes them
    with pytest.raises(client.ApiException) as bad_patch:
        custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "p", {"spec": {"minMember": "x"}})
    assert bad_patch.value.status == 422


def test_versions_share_storage_and_differ_in_api_version(kube_api: KubeApiServer, crds, custom):
    crds.create_custom_resource_definition(PODGROUP_CRD)
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("g"))
    other = custom.get_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL, "g")
    assert other["apiVersion"] == f"{GROUP}/v1beta1" and other["spec"] == {"minMember": 2}
    assert kube_api.get_object(f"{PLURAL}.{GROUP}", "g", "default")["apiVersion"] == f"{GROUP}/v1alpha1"


def test_cluster_scoped_crd_and_invalid_crds(kube_api: KubeApiServer, crds, custom):
    spec = copy.deepcopy(PODGROUP_CRD)
    spec["metadata"]["name"] = f"quotas.{GROUP}"
    spec["spec"].update(scope="Cluster", names={"plural": "quotas", "kind": "Quota"})
    spec["spec"]["versions"] = [{"name": "v1", "served": True, "storage": True,
                                 "schema": {"openAPIV3Schema": {"type": "object",
                                                                "x-kubernetes-preserve-unknown-fields": True}}}]
    crds.create_custom_resource_definition(spec)
    made = custom.create_cluster_custom_object(GROUP, "v1", "quotas", {"apiVersion": f"{GROUP}/v1", "kind": "Quota",
                                                                       "metadata": {"name": "q"}, "anything": 1})
    assert "namespace" not in made["metadata"] and made["anything"] == 1
    with pytest.raises(client.ApiException) as namespaced:
        custom.create_namespaced_custom_object(GROUP, "v1", "default", "quotas", {"metadata": {"name": "x"}})
    assert namespaced.value.status == 404
    wrong = copy.deepcopy(PODGROUP_CRD)
    wrong["metadata"]["name"] = "podgroups"
    with pytest.raises(client.ApiException) as invalid:
        crds.create_custom_resource_definition(wrong)
    assert invalid.value.status == 422
    assert json.loads(invalid.value.body)["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "podgroups" is invalid: metadata.name: Invalid value: '
        '"podgroups": must be spec.names.plural+"."+spec.group')


def test_watch_sees_changes_and_ends_when_the_crd_is_deleted(kube_api: KubeApiServer, crds, custom):
    crds.create_custom_resource_definition(PODGROUP_CRD)
    start = custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)["metadata"]["resourceVersion"]
    seen: list[tuple[str, str, str]] = []

    def consume() -> None:
        for event in watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, "v1alpha1", "default", PLURAL,
                                          resource_version=start, timeout_seconds=20):
            obj = event["object"]
            seen.append((event["type"], obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    custom.create_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, podgroup("w"))
    custom.patch_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "w", {"spec": {"minMember": 4}})
    kube_api.wait_for(lambda: len(seen) >= 2)
    crds.delete_custom_resource_definition(f"{PLURAL}.{GROUP}")
    reader.join(timeout=15)
    assert not reader.is_alive(), "the watch did not end when its CRD was deleted"
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    assert [int(rv) for _, _, rv in seen] == sorted(int(rv) for _, _, rv in seen)
    with pytest.raises(client.ApiException) as gone:
        custom.list_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL)
    assert gone.value.status == 404
    assert kube_api.list_objects(f"{PLURAL}.{GROUP}") == []


def test_hooks_create_custom_objects(kube_api: KubeApiServer, custom):
    kube_api.create_object("customresourcedefinitions", copy.deepcopy(PODGROUP_CRD))
    kube_api.create_object(f"{PLURAL}.{GROUP}", podgroup("h"))
    assert custom.get_namespaced_custom_object(GROUP, "v1alpha1", "default", PLURAL, "h")["spec"]["minMember"] == 2
    kube_api.delete_object("customresourcedefinitions", f"{PLURAL}.{GROUP}")
    assert kube_api.list_objects(f"{PLURAL}.{GROUP}") == []


def test_server_side_apply_creates_then_merges_and_changes_nothing_when_equal(kube_api: KubeApiServer,
                                                                               kube_api_kubeconfig):
    """As deploy-scheduler applies (labkit.scheduler_deploy.apply): created, unchanged, configured."""
    from labkit.kube import Kube, KubeError

    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}"
    query = {"fieldManager": "kubelab", "force": "true"}
    kube = Kube.from_kubeconfig(kube_api_kubeconfig)
    try:
        created = kube.request("PATCH", path, body=PODGROUP_CRD, query=query,
                               content_type="application/apply-patch+yaml")
        again = kube.request("PATCH", path, body=PODGROUP_CRD, query=query,
                             content_type="application/apply-patch+yaml")
        assert again["metadata"]["resourceVersion"] == kube.get_or_none(path)["metadata"]["resourceVersion"]
        assert int(again["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])  # established
        assert again["status"]["storedVersions"] == ["v1alpha1"]
        changed = copy.deepcopy(PODGROUP_CRD)
        changed["spec"]["names"]["shortNames"] = ["pgs"]
        configured = kube.request("PATCH", path, body=changed, query=query,
                                  content_type="application/apply-patch+yaml")
        assert configured["spec"]["names"]["shortNames"] == ["pgs"] and configured["status"] == again["status"]
        with pytest.raises(KubeError) as no_manager:
            kube.request("PATCH", path, body=changed, content_type="application/apply-patch+yaml")
        assert no_manager.value.status == 400
    finally:
        kube.close()
