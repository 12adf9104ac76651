"""Label and field selectors: parser units and list filtering through the official client."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import lookup
from kubeapi_testserver.selectors import labels_match, parse_field_selector, parse_label_selector
from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def _obj(labels: dict[str, str]) -> dict:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "web"}, True),
    ("app=web", {"app": "db"}, False),
    ("app!=web", {"app": "db"}, True),
    ("app!=web", {}, True),  # != matches objects without the key
    ("tier in (a, b)", {"tier": "b"}, True),
    ("tier in (a,b)", {"tier": "c"}, False),
    ("tier notin (a,b)", {}, True),
    ("tier notin (a,b)", {"tier": "a"}, False),
    ("gpu", {"gpu": ""}, True),
    ("gpu", {}, False),
    ("!gpu", {}, True),
    ("!gpu", {"gpu": "x"}, False),
    ("app=web,tier in (a,b),!gpu", {"app": "web", "tier": "a"}, True),
    ("app=web,tier in (a,b),!gpu", {"app": "web", "tier": "a", "gpu": "1"}, False),
    ("node-role.kubernetes.io/control-plane", {"node-role.kubernetes.io/control-plane": ""}, True),
    ("node-role.kubernetes.io/control-plane=true", {"node-role.kubernetes.io/control-plane": ""}, False),
    ("cores>2", {"cores": "4"}, True),
    ("cores<2", {"cores": "4"}, False),
    ("", {"anything": "x"}, True),
])
def test_label_selector(selector: str, labels: dict[str, str], expected: bool):
    assert labels_match(parse_label_selector(selector), _obj(labels)) is expected


@pytest.mark.parametrize("bad", ["app in ()", "=x", "a b c"])
def test_bad_label_selector_is_bad_request(bad: str):
    with pytest.raises(StatusError) as info:
        parse_label_selector(bad)
    assert info.value.code == 400


def test_field_selector_rejects_unsupported_field():
    pods = lookup("", "v1", "pods")
    assert pods is not None
    with pytest.raises(StatusError) as info:
        parse_field_selector("spec.containers=x", pods.fields)
    assert info.value.body["message"] == "field label not supported: spec.containers"


def test_list_with_field_selectors(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("pending-mine", scheduler_name="my-scheduler")
    kube_api.add_pod("pending-default")
    kube_api.add_pod("bound-mine", scheduler_name="my-scheduler", node_name="node-a")
    kube_api.add_pod("other-ns", "kube-system", scheduler_name="my-scheduler")

    def names(**kw) -> list[str]:
        return sorted(p.metadata.name for p in core_v1.list_pod_for_all_namespaces(**kw).items)

    assert names(field_selector="spec.nodeName=") == ["other-ns", "pending-default", "pending-mine"]
    assert names(field_selector="spec.schedulerName=my-scheduler,spec.nodeName==") == ["other-ns", "pending-mine"]
    assert names(field_selector="spec.nodeName!=") == ["bound-mine"]
    assert names(field_selector="spec.nodeName=node-a") == ["bound-mine"]
    assert names(field_selector="status.phase=Pending,metadata.namespace=kube-system") == ["other-ns"]
    assert names(field_selector="metadata.name=pending-default") == ["pending-default"]
    assert names(field_selector="status.phase!=Pending") == []


def test_unsupported_field_selector_over_http_is_400(kube_api: KubeApiServer, core_v1):
    with pytest.raises(client.ApiException) as info:
        core_v1.list_node(field_selector="status.capacity.cpu=4")
    assert info.value.status == 400
    assert "field label not supported: status.capacity.cpu" in info.value.body


def test_list_with_label_selectors(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("a", labels={"network-topology": "high-speed", "zone": "z1"})
    kube_api.add_node("b", labels={"network-topology": "standard", "zone": "z2"})
    kube_api.add_node("c", labels={"zone": "z1"})

    def names(sel: str) -> list[str]:
        return [n.metadata.name for n in core_v1.list_node(label_selector=sel).items]

    assert names("network-topology=high-speed") == ["a"]
    assert names("network-topology") == ["a", "b"]
    assert names("!network-topology") == ["c"]
    assert names("zone in (z1),network-topology!=high-speed") == ["c"]
    assert names("zone notin (z1)") == ["b"]


def test_node_unschedulable_field(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("a")
    kube_api.add_node("b", unschedulable=True)
    assert [n.metadata.name for n in core_v1.list_node(field_selector="spec.unschedulable=true").items] == ["b"]
    assert [n.metadata.name for n in core_v1.list_node(field_selector="spec.unschedulable!=true").items] == ["a"]
    # An absent bool reads "false", as the typed Go field would.
    assert [n.metadata.name for n in core_v1.list_node(field_selector="spec.unschedulable=false").items] == ["a"]
