"""Leases for leader election (optimistic concurrency) and events through both event APIs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from kubernetes import client

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def _lease(holder: str) -> client.V1Lease:
    now = datetime.now(UTC)
    return client.V1Lease(metadata=client.V1ObjectMeta(name="my-scheduler", namespace="kube-system"),
                          spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=15,
                                                  acquire_time=now, renew_time=now, lease_transitions=0))


def test_lease_create_get_and_conflicting_update(kube_api: KubeApiServer, kube_api_client):
    coord = client.CoordinationV1Api(kube_api_client)
    created = coord.create_namespaced_lease("kube-system", _lease("a"))
    with pytest.raises(client.ApiException) as exists:
        coord.create_namespaced_lease("kube-system", _lease("b"))
    assert exists.value.status == 409
    assert json.loads(exists.value.body)["reason"] == "AlreadyExists"
    assert json.loads(exists.value.body)["message"] == 'leases.coordination.k8s.io "my-scheduler" already exists'

    seen_by_a = coord.read_namespaced_lease("my-scheduler", "kube-system")
    seen_by_b = coord.read_namespaced_lease("my-scheduler", "kube-system")
    seen_by_a.spec.renew_time = datetime.now(UTC)
    renewed = coord.replace_namespaced_lease("my-scheduler", "kube-system", seen_by_a)
    assert int(renewed.metadata.resource_version) > int(created.metadata.resource_version)

    seen_by_b.spec.holder_identity = "b"
    with pytest.raises(client.ApiException) as conflict:
        coord.replace_namespaced_lease("my-scheduler", "kube-system", seen_by_b)
    body = json.loads(conflict.value.body)
    assert conflict.value.status == 409 and body["reason"] == "Conflict"
    assert body["details"] == {"name": "my-scheduler", "group": "coordination.k8s.io", "kind": "leases"}
    assert coord.read_namespaced_lease("my-scheduler", "kube-system").spec.holder_identity == "a"


def test_missing_lease_is_404(kube_api: KubeApiServer, kube_api_client):
    with pytest.raises(client.ApiException) as info:
        client.CoordinationV1Api(kube_api_client).read_namespaced_lease("nope", "kube-system")
    assert info.value.status == 404
    assert json.loads(info.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'leases.coordination.k8s.io "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "group": "coordination.k8s.io", "kind": "leases"}, "code": 404}


def _scheduled_event(pod: dict) -> client.EventsV1Event:
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(generate_name=pod["metadata"]["name"] + "."),
        event_time=datetime.now(UTC), reporting_controller="my-scheduler", reporting_instance="my-scheduler-1",
        action="Binding", reason="Scheduled", type="Normal", note="Successfully assigned default/p1 to node-a",
        regarding=client.V1ObjectReference(kind="Pod", namespace="default", name="p1", uid=pod["metadata"]["uid"]))


def test_events_v1_post_is_listed_through_core_v1(kube_api: KubeApiServer, kube_api_client, core_v1):
    pod = kube_api.add_pod("p1")
    created = client.EventsV1Api(kube_api_client).create_namespaced_event("default", _scheduled_event(pod))
    assert created.regarding.name == "p1" and created.note.startswith("Successfully assigned")

    core_events = core_v1.list_namespaced_event("default", field_selector="involvedObject.name=p1").items
    assert len(core_events) == 1
    event = core_events[0]
    assert (event.reason, event.message, event.reporting_component, event.involved_object.uid) == (
        "Scheduled", "Successfully assigned default/p1 to node-a", "my-scheduler", pod["metadata"]["uid"])
    assert kube_api.events("default")[0]["reportingComponent"] == "my-scheduler"
    stored = kube_api.events("default")[0]  # kept as a core/v1 Event, served back as events.k8s.io/v1
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "Event")
    assert (created.api_version, created.kind) == ("events.k8s.io/v1", "Event")


def test_events_v1_requires_the_strict_fields(kube_api: KubeApiServer, kube_api_client):
    pod = kube_api.add_pod("p1")
    event = _scheduled_event(pod)
    event.action = None
    event.reporting_controller = None
    with pytest.raises(client.ApiException) as info:
        client.EventsV1Api(kube_api_client).create_namespaced_event("default", event)
    body = json.loads(info.value.body)
    assert info.value.status == 422 and body["reason"] == "Invalid"
    assert {c["field"] for c in body["details"]["causes"]} == {"reportingController", "action"}


def test_core_v1_event_post_and_events_v1_field_selector(kube_api: KubeApiServer, kube_api_client, core_v1):
    core_v1.create_namespaced_event("default", client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="p1.1"), involved_object=client.V1ObjectReference(kind="Pod", name="p1",
                                                                                          namespace="default"),
        reason="FailedScheduling", message="0/1 nodes are available: 1 Insufficient cpu.", type="Warning",
        # Without eventTime the events.k8s.io/v1 view has eventTime null, which the Python client's
        # EventsV1Event refuses, as it would against a real cluster.
        event_time=datetime.now(UTC)))
    listed = client.EventsV1Api(kube_api_client).list_namespaced_event(
        "default", field_selector="regarding.name=p1,reason=FailedScheduling").items
    assert [e.note for e in listed] == ["0/1 nodes are available: 1 Insufficient cpu."]


def test_configmap_roundtrip(kube_api: KubeApiServer, core_v1):
    core_v1.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"k": "v"}})
    assert core_v1.read_namespaced_config_map("cfg", "default").data == {"k": "v"}


def test_events_v1_watch_converts_core_events(kube_api: KubeApiServer, kube_api_client, core_v1):
    from kubernetes import watch
    rv = str(kube_api.resource_version)
    pod = kube_api.add_pod("p1")
    client.EventsV1Api(kube_api_client).create_namespaced_event("default", _scheduled_event(pod))
    stream = watch.Watch().stream(client.EventsV1Api(kube_api_client).list_namespaced_event, "default",
                                  resource_version=rv, timeout_seconds=5)
    event = next(iter(stream))
    assert event["type"] == "ADDED"
    assert event["raw_object"]["apiVersion"] == "events.k8s.io/v1"
    assert event["object"].regarding.name == "p1" and event["object"].reporting_controller == "my-scheduler"


def test_lease_put_without_resource_version_is_invalid(kube_api: KubeApiServer, kube_api_client):
    coord = client.CoordinationV1Api(kube_api_client)
    coord.create_namespaced_lease("kube-system", _lease("a"))
    blind = _lease("b")  # no resourceVersion: leases do not allow unconditional updates
    with pytest.raises(client.ApiException) as info:
        coord.replace_namespaced_lease("my-scheduler", "kube-system", blind)
    body = json.loads(info.value.body)
    assert info.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('leases.coordination.k8s.io "my-scheduler" is invalid: metadata.resourceVersion: '
                               "Invalid value: 0x0: must be specified for an update")
