"""pods/{name}/binding and namespaces/{ns}/bindings with the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def _binding(name: str, node: str, uid: str | None = None) -> client.V1Binding:
    return client.V1Binding(metadata=client.V1ObjectMeta(name=name, uid=uid),
                            target=client.V1ObjectReference(kind="Node", name=node))


def test_successful_bind_answers_201_status_success(kube_api: KubeApiServer, core_v1):
    pod = kube_api.add_pod("p1")
    resp = core_v1.create_namespaced_pod_binding("p1", "default", _binding("p1", "node-a", pod["metadata"]["uid"]),
                                                 _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                     "code": 201}
    bound = core_v1.read_namespaced_pod("p1", "default")
    assert bound.spec.node_name == "node-a"
    scheduled = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert len(scheduled) == 1 and scheduled[0].status == "True"


def test_client_deserialisation_trap_is_kept(kube_api: KubeApiServer, core_v1):
    """The official client's create_namespaced_binding: the bind succeeds, the server answers a Status, and
    the client fails to read it as a V1Binding."""
    kube_api.add_pod("p1")
    with pytest.raises(ValueError, match="Invalid value for `target`, must not be `None`"):
        core_v1.create_namespaced_binding("default", _binding("p1", "node-a"))
    assert kube_api.bound_pods() == {"default/p1": "node-a"}


def test_uid_precondition_mismatch_is_409_and_leaves_pod_pending(kube_api: KubeApiServer, core_v1):
    old = kube_api.add_pod("p1")
    kube_api.remove_pod("p1")
    new = kube_api.add_pod("p1")  # re-created: same name, new uid
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("p1", "default", _binding("p1", "node-a", old["metadata"]["uid"]),
                                              _preload_content=False)
    assert info.value.status == 409
    body = json.loads(info.value.body)
    assert body["reason"] == "Conflict"
    assert body["message"] == (f'Operation cannot be fulfilled on pods "p1": Precondition failed: UID in '
                               f'precondition: {old["metadata"]["uid"]}, UID in object meta: {new["metadata"]["uid"]}')
    assert kube_api.bound_pods() == {}


def test_already_assigned_is_409_naming_the_node(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1", node_name="node-b")
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("p1", "default", _binding("p1", "node-a"), _preload_content=False)
    body = json.loads(info.value.body)
    assert info.value.status == 409
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'Operation cannot be fulfilled on pods/binding "p1": pod p1 is already assigned '
                               'to node "node-b"',
                    "reason": "Conflict", "details": {"name": "p1", "kind": "pods/binding"}, "code": 409}


def test_binding_a_deleted_pod_is_404(kube_api: KubeApiServer, core_v1):
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("gone", "default", _binding("gone", "node-a"), _preload_content=False)
    assert info.value.status == 404
    assert json.loads(info.value.body)["message"] == 'pods "gone" not found'


def test_binding_name_must_match_url(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("p1", "default", _binding("other", "node-a"), _preload_content=False)
    assert info.value.status == 400
    assert "name in URL does not match name in Binding object" in info.value.body


def test_binding_copies_annotations(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    body = {"metadata": {"name": "p1", "annotations": {"placed-by": "test"}}, "target": {"name": "node-a"}}
    core_v1.create_namespaced_binding("default", body, _preload_content=False)
    assert kube_api.get_object("pods", "p1", "default")["metadata"]["annotations"] == {"placed-by": "test"}


def test_exactly_one_of_two_racing_binds_wins(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    codes = []
    for node in ("node-a", "node-b"):
        try:
            codes.append(core_v1.create_namespaced_pod_binding("p1", "default", _binding("p1", node),
                                                               _preload_content=False).status)
        except client.ApiException as exc:
            codes.append(exc.status)
    assert codes == [201, 409]
    assert kube_api.bound_pods() == {"default/p1": "node-a"}
