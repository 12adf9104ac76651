"""Waiting for Ready nodes and system pods: what the user sees while waiting and when it times out."""

from __future__ import annotations

import json

import pytest

from deploys.readiness import NotReadyError, node_problems, pod_problems, wait_for


def node(name: str, status: str, reason: str = "KubeletReady", message: str = "") -> dict:
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": status, "reason": reason, "message": message}]}}


def pod(namespace: str, name: str, app: str, ready: str, phase: str = "Running") -> dict:
    return {"metadata": {"namespace": namespace, "name": name, "labels": {"k8s-app": app}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}}


def as_json(*items) -> str:
    return json.dumps({"items": list(items)})


def test_node_problems_name_the_node_and_what_it_reports():
    nodes = as_json(node("cp", "True"),
                    node("w1", "False", "KubeletNotReady", "container runtime network not ready: cni plugin not initialized"))
    assert node_problems(nodes, ["cp", "w1", "w2"]) == {
        "w1": "Ready=False (KubeletNotReady: container runtime network not ready: cni plugin not initialized)",
        "w2": "not registered with the API server",
    }
    assert node_problems(as_json(node("cp", "True")), ["cp"]) == {}


def test_pod_problems_count_missing_apps():
    pods = as_json(pod("calico-system", "calico-node-x", "calico-node", "True"),
                   pod("kube-system", "coredns-1", "kube-dns", "False", "Pending"))
    assert pod_problems(pods) == {"kube-system/coredns-1": "Pending"}
    assert pod_problems(as_json()) == {"calico-node": "no pods yet", "kube-dns": "no pods yet"}


def test_wait_prints_progress_and_times_out_naming_what_is_late():
    now = [0.0]
    answers = iter([{"w1": "not registered with the API server"}] * 2 + [{"w1": "Ready=False (x)"}] * 10)
    lines: list[str] = []
    with pytest.raises(NotReadyError, match=r"nodes not ready after 30s:\n  w1: Ready=False \(x\)"):
        wait_for("nodes", lambda: next(answers), 30, lines.append, interval=10,
                 clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert lines == ["nodes: waiting for w1: not registered with the API server", "nodes: waiting for w1: Ready=False (x)"]


def test_wait_returns_when_ready():
    answers = iter([{"w1": "Ready=False"}, {}])
    lines: list[str] = []
    wait_for("nodes", lambda: next(answers), 60, lines.append, interval=0, sleep=lambda s: None)
    assert lines[-1] == "nodes: ready"
