"""PersistentVolumeClaims, PersistentVolumes and StorageClasses as kube-apiserver serves them: claims are
namespaced, volumes and classes cluster-scoped
(https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/), read through the
official Python client to prove the shapes. No PV controller runs in the test server."""

from __future__ import annotations

from kubernetes import client, watch

from kubeapi_testserver.server import KubeApiServer
from tests.scheduler.builders import claim_obj, pv_obj, storage_class_obj


def test_claims_are_namespaced_and_volumes_and_classes_are_not(kube_api: KubeApiServer, core_v1: client.CoreV1Api,
                                                               kube_api_client: client.ApiClient) -> None:
    body = claim_obj("data")
    del body["status"]
    created = core_v1.create_namespaced_persistent_volume_claim("default", body)
    assert created.status.phase == "Pending"  # the v1 defaults, until a PV controller binds it
    assert [c.metadata.name for c in core_v1.list_persistent_volume_claim_for_all_namespaces().items] == ["data"]
    assert core_v1.list_namespaced_persistent_volume_claim("other").items == []
    core_v1.create_persistent_volume({k: v for k, v in pv_obj("pv-1").items() if k != "status"})
    assert core_v1.read_persistent_volume("pv-1").metadata.namespace is None
    storage = client.StorageV1Api(kube_api_client)
    storage.create_storage_class(storage_class_obj("local", "WaitForFirstConsumer"))
    standard = storage.create_storage_class({k: v for k, v in storage_class_obj("standard").items()
                                             if k != "volumeBindingMode"})
    assert (standard.volume_binding_mode, standard.reclaim_policy) == ("Immediate", "Delete")


def test_claims_can_be_watched(kube_api: KubeApiServer, core_v1: client.CoreV1Api) -> None:
    listed = core_v1.list_persistent_volume_claim_for_all_namespaces()
    kube_api.create_object("persistentvolumeclaims", claim_obj("data"))
    events = watch.Watch().stream(core_v1.list_persistent_volume_claim_for_all_namespaces,
                                  resource_version=listed.metadata.resource_version, timeout_seconds=2)
    first = next(events)
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "data")
