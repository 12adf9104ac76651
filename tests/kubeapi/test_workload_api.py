"""The Workload API (scheduling.k8s.io/v1alpha2) as the official Python client reads and writes it: workloads,
podgroups and the podgroups/status subresource kube-scheduler writes PodGroupScheduled through."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api

GROUP = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
         "metadata": {"name": "train"},
         "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
                  "schedulingPolicy": {"gang": {"minCount": 3}}},
         "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def test_workloads_and_podgroups_are_served(kube_api: KubeApiServer, kube_api_client: client.ApiClient):
    api = client.SchedulingV1alpha2Api(kube_api_client)
    api.create_namespaced_workload("default", {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "train"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]}})
    created = api.create_namespaced_pod_group("default", GROUP)
    assert created.status.conditions is None  # the status sent at creation is dropped
    assert created.spec.disruption_mode == "Pod"
    assert [w.metadata.name for w in api.list_namespaced_workload("default").items] == ["train"]
    assert [g.metadata.name for g in api.list_pod_group_for_all_namespaces().items] == ["train"]


def test_podgroup_status_goes_through_the_subresource_only(kube_api: KubeApiServer,
                                                           kube_api_client: client.ApiClient):
    api = client.SchedulingV1alpha2Api(kube_api_client)
    api.create_namespaced_pod_group("default", GROUP)
    api.patch_namespaced_pod_group_status("train", "default", {
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        "status": {"conditions": [{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
                                   "message": "pod group is unschedulable",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    api.patch_namespaced_pod_group("train", "default", {"status": {"conditions": []}})
    stored = kube_api.get_object("podgroups", "train", "default")
    assert stored["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert [(c["type"], c["status"], c["reason"]) for c in stored["status"]["conditions"]] == [
        ("PodGroupScheduled", "False", "Unschedulable")]
