"""The page's model of the cluster (labkit/ui/state.py), fed the objects the watches deliver."""

from __future__ import annotations

import pytest

from kubeapi_testserver.objects import make_pod
from labkit.placement.explain import ExplainError
from labkit.placement.explain_verb import parse_what_if
from labkit.ui.state import ClusterState, node_summary


def _node(name: str, **spec: object) -> dict:
    return {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": "",
                                                  "topology.kubernetes.io/zone": "z1", "kubernetes.io/os": "linux",
                                                  "network-topology": "high-speed"}},
            "spec": spec, "status": {"allocatable": {"cpu": "2", "memory": "2Gi", "pods": "110"},
                                     "conditions": [{"type": "Ready", "status": "True"}]}}


def test_node_summary_keeps_what_matters() -> None:
    summary = node_summary(_node("cp", unschedulable=True, taints=[
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}, {"key": "a", "value": "b",
                                                                                    "effect": "NoExecute"}]))
    assert summary["role"] == "control-plane" and summary["zone"] == "z1" and summary["unschedulable"]
    assert summary["labels"]["network-topology"] == "high-speed"
    assert summary["labels"]["topology.kubernetes.io/zone"] == "z1"  # every label: the page groups by any
    assert summary["taints"] == ["node-role.kubernetes.io/control-plane:NoSchedule", "a=b:NoExecute"]
    assert summary["allocatable"] == {"cpu": 2000, "memory": 2 * 1024**3, "pods": 110}


def test_pods_changes_and_events_reach_the_listeners() -> None:
    state = ClusterState()
    heard: list = []
    state.listeners.append(heard.extend)
    pod = make_pod("web", cpu="250m", memory="64Mi", scheduler_name="mine")
    pod["metadata"]["uid"] = "u1"
    state.pod_changed(pod)
    state.event_changed({"reason": "FailedScheduling", "message": "0/3 nodes are available: old",
                         "lastTimestamp": "2026-01-01T00:00:00Z",
                         "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"}})
    state.event_changed({"reason": "FailedScheduling", "message": "0/3 nodes are available: new",
                         "lastTimestamp": "2026-01-01T00:00:05Z",
                         "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"}})
    (shown,) = state.snapshot()["pods"]
    assert (shown["cpu"], shown["memory"], shown["scheduler"], shown["node"]) == (250, 64 * 1024**2, "mine", "")
    assert shown["failed"] == "0/3 nodes are available: new" and not shown["preempted"]
    state.event_changed({"reason": "Preempted", "message": "Preempted by pod x",
                         "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"}})
    assert heard[-1][2]["preempted"]
    state.pod_changed({**pod, "status": {"phase": "Succeeded"}})  # terminal: holds no place any more
    assert heard[-1] == ("pod", "default/web", None) and state.snapshot()["pods"] == []


def test_what_if_text_needs_a_name_and_names_the_field() -> None:
    with pytest.raises(ExplainError, match="the form: metadata.name: required"):
        parse_what_if("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n", "the form",
                      None, None)
    with pytest.raises(ExplainError, match=r"spec.containers\[0\].resources.requests.cpu"):
        parse_what_if("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, "
                      "resources: {requests: {cpu: lots}}}]}\n", "the form", None, None)


def test_metrics_headline_from_the_schedulers_own_registry() -> None:
    """The figures the page shows, read from what the scheduler's /metrics serves."""
    from prometheus_client import generate_latest

    from labkit.ui.scheduler_view import headline
    from scheduler.runtime.metrics import Metrics

    metrics = Metrics()
    metrics.attempts.labels("scheduled", "p").inc(3)
    metrics.attempts.labels("unschedulable", "p").inc()
    metrics.pending_pods.labels("active").set(2)
    figures = headline(generate_latest(metrics.registry).decode())
    assert (figures["scheduled"], figures["unschedulable"], figures["pending active"]) == (3, 1, 2)


def test_a_slice_or_claim_change_tells_the_nodes_whose_devices_it_changed() -> None:
    """The node's devices as the scheduler reads the slices; a claim's allocation marks the devices it holds
    with the claim and its pods, told as a change of that node only."""
    from tests.placement.dra_driver import example_slice

    state = ClusterState()
    heard: list = []
    state.listeners.append(heard.extend)
    for name in ("w1", "w2"):
        node = _node(name)
        node["metadata"]["labels"] = {}
        state.node_changed(node)
    heard.clear()
    state._devices_changed("slices", example_slice("w1", 2), gone=False)
    state.flush_devices()
    assert [(kind, key) for kind, key, _ in heard] == [("node", "w1")]
    devices = heard[0][2]["devices"]
    assert [(d["driver"], d["pool"], d["name"], d["claim"]) for d in devices] == [
        ("gpu.example.com", "w1", "gpu-0", ""), ("gpu.example.com", "w1", "gpu-1", "")]
    assert devices[0]["attributes"] == {"index": "0", "uuid": "gpu-w1-0", "model": "LATEST-GPU-MODEL"}
    heard.clear()
    claim = {"metadata": {"name": "c", "namespace": "ns"}, "status": {
        "allocation": {"devices": {"results": [
            {"request": "r", "driver": "gpu.example.com", "pool": "w1", "device": "gpu-1"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}
    state._devices_changed("claims", claim, gone=False)
    state.flush_devices()
    (change,) = heard
    assert [(d["name"], d["claim"], d["pods"]) for d in change[2]["devices"]] == [
        ("gpu-0", "", []), ("gpu-1", "ns/c", ["ns/p"])]
    heard.clear()
    state._devices_changed("claims", claim, gone=True)
    state.flush_devices()
    assert [d["claim"] for d in heard[0][2]["devices"]] == ["", ""]
    assert state.snapshot()["nodes"][1]["devices"] == []  # w2 publishes none
