"""Fake cluster objects for the benchmarks, as plain API dicts.

Nodes follow upstream scheduler_perf's node template (test/integration/scheduler_perf/templates/
node-default.yaml): only status capacity/allocatable and a Ready condition, no kubelet behind them. Pods follow
its pod-default.yaml: one pause container requesting 100m cpu and 500Mi memory. Existing pods (the cluster's
current load) are already bound, with a few request sizes so nodes differ in load.
"""

from __future__ import annotations

import random
from typing import Any

Obj = dict[str, Any]

BENCH_LABEL = "kubelab.io/benchmark"  # on every object a benchmark creates, value = the run id
NODE_CPU = "32"
NODE_MEMORY = "256Gi"
NODE_PODS = 250  # room for 10,000 existing pods on 100 nodes plus the measured ones
EXISTING_SIZES = (("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"))


def node(name: str, run_id: str, *, cpu: str = NODE_CPU, memory: str = NODE_MEMORY, pods: int = NODE_PODS) -> Obj:
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, BENCH_LABEL: run_id}},
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources),
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "benchmark node (no kubelet)"}],
                   "phase": "Running"},
    }


def pending_pod(name: str, namespace: str, scheduler_name: str, run_id: str, *,
                node_selector: dict[str, str] | None = None, anti_affinity_group: str | None = None) -> Obj:
    """A pod for the scheduler to place. It passes the restricted Pod Security level, so a real cluster's
    admission accepts it in any namespace, and keeps the service account token a pod gets by default (the
    projected volume is a fifth of what the API server sends a scheduler per pod). With
    ``anti_affinity_group`` it is labelled ``group=<it>`` and refuses a node holding another pod of the group
    (required podAntiAffinity on kubernetes.io/hostname), as the replicas of a spread-out Deployment do."""
    spec: Obj = {
        "schedulerName": scheduler_name,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65535, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "pause", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                          "limits": {"cpu": "100m", "memory": "500Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    labels = {BENCH_LABEL: run_id}
    if anti_affinity_group:
        labels["group"] = anti_affinity_group
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"group": anti_affinity_group}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}


def existing_pods(count: int, node_names: list[str], rng: random.Random) -> list[Obj]:
    """`count` pods already bound, spread round robin with a random request size each."""
    pods = []
    for i in range(count):
        cpu, memory = rng.choice(EXISTING_SIZES)
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"existing-{i}", "namespace": "bench-existing", "uid": f"existing-{i}"},
            "spec": {"nodeName": node_names[i % len(node_names)], "schedulerName": "default-scheduler",
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running"},
        })
    return pods
