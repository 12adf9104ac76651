"""explain for pods with DRA claims (labkit.placement.explain_devices): each node's devices, what claims hold
of them, and how many devices each request's selectors accept there and are free; a bound pod's claims with
the devices they hold. Pure, no cluster: the ResourceSlices, DeviceClass and claims are built as the example
driver and the API server write them, the profile is the one deploy-scheduler renders."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from kubeapi_testserver.objects import make_node, make_pod
from labkit.placement.explain import cluster_view, explain_pod
from labkit.placement.explain_devices import OURS
from labkit.placement.explain_view import print_explanation
from scheduler.plugins.dynamic_resources import CLAIMS, CLASSES, SLICES
from tests.placement.test_explain import SCHEDULER, lab_config
from tests.scheduler_api.test_dra import claim, gpu_class, gpu_slice


def allocated(obj: dict[str, Any], node: str, devices: list[str], pod: str) -> dict[str, Any]:
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "r0", "driver": "gpu.example.com", "pool": node, "device": d} for d in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}]}
    return obj


def claiming(name: str, claim_name: str, node: str | None = None) -> dict[str, Any]:
    pod = make_pod(name, "default", scheduler_name=SCHEDULER, node_name=node)
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["resourceClaims"] = [{"name": "c0", "resourceClaimName": claim_name}]
    return pod


def explain(pod: dict[str, Any], claims: list[dict[str, Any]]):
    nodes = [make_node(n) for n in ("a", "b", "c")]
    objects = {SLICES: [gpu_slice("a", 3), gpu_slice("b", 2)], CLASSES: [gpu_class()], CLAIMS: claims}
    config = lab_config()
    profile = config.profile(SCHEDULER)
    view = cluster_view(nodes, [pod], [], skip_uid=pod["metadata"]["uid"], watches=profile.watches, objects=objects)
    return explain_pod(pod, view, profile, config.source)


def test_each_node_says_what_it_has_what_is_held_and_what_matches():
    """a has 3 GPUs, 2 held by claim held: the pod's claim wanting 2 cannot be allocated there (kube-scheduler's
    reason), and the detail line says why; b has 2 free and is chosen; c publishes none."""
    claims = [allocated(claim("held", 2), "a", ["gpu-0", "gpu-1"], "other"), claim("want", 2)]
    why = explain(claiming("p", "want"), claims)
    assert why.chosen == "b"
    by_node = {n.node: n for n in why.nodes}
    assert by_node["a"].reasons == ["DynamicResources: cannot allocate all claims"]
    report = why.devices
    assert report is not None and report.problem == ""
    assert [c.as_json() for c in report.claims] == [
        {"claim": "default/want", "allocated": False, "holds": [], "reserved_for": []}]
    detail = {n.node: n.text for n in report.nodes}
    assert detail["a"] == ("gpu.example.com: 3 devices, 2 held by claim default/held; "
                           "request r0 of default/want wants 2 gpu: 3 match, 1 free")
    assert detail["b"] == ("gpu.example.com: 2 devices, none held; "
                           "request r0 of default/want wants 2 gpu: 2 match, 2 free")
    assert detail["c"].startswith("no devices published for this node; request r0 of default/want wants 2 gpu: "
                                  "0 match, 0 free")
    assert [n.node for n in report.nodes] == [n.node for n in why.nodes]  # the table's order
    assert why.as_json()["devices"]["nodes"][1]["requests"][0] == {
        "claim": "default/want", "request": "r0", "device_class": "gpu", "selectors": [], "count": 2,
        "all": False, "matching": 3, "free": 1}
    out = io.StringIO()
    print_explanation(Console(file=out, width=300), why)
    text = out.getvalue()
    assert OURS in text and f"a: {detail['a']}" in text


def test_a_request_selector_is_counted_with_the_class():
    want = claim("want", 1)
    want["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["gpu.example.com"].model == "h100"'}}]
    why = explain(claiming("p", "want"), [want])
    assert why.chosen is None
    detail = {n.node: n for n in why.devices.nodes}
    (request,) = detail["a"].requests
    assert (request.matching, request.free) == (0, 0)
    assert request.text == ("request r0 of default/want wants 1 gpu matching "
                            "'device.attributes[\"gpu.example.com\"].model == \"h100\"': 0 match, 0 free")


def test_a_bound_pod_shows_the_devices_its_claim_holds():
    claims = [allocated(claim("mine", 2), "a", ["gpu-1", "gpu-2"], "p")]
    why = explain(claiming("p", "mine", node="a"), claims)
    (mine,) = why.devices.claims
    assert mine.allocated and mine.reserved_for == ["p"]
    assert [d["device"] for d in mine.holds] == ["gpu-1", "gpu-2"] and {d["pool"] for d in mine.holds} == {"a"}
    assert {n.node: n.requests for n in why.devices.nodes}["a"] == []  # nothing left to allocate
    out = io.StringIO()
    print_explanation(Console(file=out, width=300), why)
    assert "claim default/mine holds gpu.example.com/a/gpu-1, gpu.example.com/a/gpu-2 (reserved for p)" \
        in out.getvalue()


def test_a_missing_class_is_said_and_a_pod_without_claims_has_no_device_report():
    why = explain(claiming("p", "want"), [claim("want", 1, device_class="tpu")])
    assert why.devices.problem == "device class tpu does not exist"
    plain = make_pod("plain", "default", scheduler_name=SCHEDULER)
    plain["metadata"]["uid"] = "uid-plain"
    assert explain(plain, []).devices is None and explain(plain, []).as_json()["devices"] is None
