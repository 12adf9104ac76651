"""Builders for realistic Node and Pod objects (plain dicts, API JSON shape).

Nodes look like a kubelet-registered node (and like scheduler_perf's node template
test/integration/scheduler_perf/templates/node-default.yaml): capacity/allocatable cpu, memory,
pods, a Ready condition, well-known labels kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch.
"""

from __future__ import annotations

from copy import copy
from typing import Any

from kubeapi_testserver.store import now_rfc3339

Obj = dict[str, Any]


def _with_given(target: Obj, **fields: Any) -> Obj:
    """`target` plus every field that was given (not None/empty/False); dicts and lists are copied so a
    caller changing its own argument later cannot change a stored object."""
    for key, value in fields.items():
        if value:
            target[key] = copy(value) if isinstance(value, dict | list) else value
    return target


def node_ready_condition(ready: bool) -> Obj:
    now = now_rfc3339()
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "container runtime network not ready",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def make_node(name: str, *, cpu: str = "4", memory: str = "32Gi", pods: int = 110,
              labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
              ready: bool = True, unschedulable: bool = False) -> Obj:
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    spec = _with_given({}, taints=taints, unschedulable=unschedulable)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       **(labels or {})},
        },
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [node_ready_condition(ready)],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                          {"type": "Hostname", "address": name}],
            # Every NodeSystemInfo field is required in the API schema (the Python client enforces it).
            "nodeInfo": {"machineID": name, "systemUUID": name, "bootID": name, "kernelVersion": "6.1.0",
                         "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.0",
                         "kubeletVersion": "v1.34.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64"},
        },
    }


def make_pod(name: str | None = None, namespace: str = "default", *, cpu: str | None = None,
             memory: str | None = None, scheduler_name: str | None = None, node_name: str | None = None,
             labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             node_selector: dict[str, str] | None = None, tolerations: list[Obj] | None = None,
             generate_name: str | None = None, image: str = "registry.k8s.io/pause:3.10") -> Obj:
    """A pending pod with one pause container, like scheduler_perf's pod-default.yaml."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: Obj = {"name": "pause", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    meta = _with_given({"namespace": namespace}, name=name, generateName=generate_name, labels=labels,
                       annotations=annotations)
    spec = _with_given({"containers": [container]}, schedulerName=scheduler_name, nodeName=node_name,
                       nodeSelector=node_selector, tolerations=tolerations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
