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


ZONE_LABEL = "topology.kubernetes.io/zone"
ZONES = 3  # the spread workload's nodes are in zone-0..zone-2, round robin
# The scheduler_perf-style workloads beside the plain one: what each pending pod carries (pending_pod).
WORKLOADS = ("plain", "anti-affinity", "preferred-affinity", "zone-affinity", "spread", "preemption")
# Nodes in zones, round robin, for the workloads that read them: zone-0..zone-(n-1).
WORKLOAD_ZONES = {"spread": ZONES, "zone-affinity": 10}
GROUPS = 4  # the zone-affinity workload's groups: pod i is in group g<i mod 4>
GROUP = "spread-out"  # the label value a workload's pods select each other by
# The preemption workload: every node full of bound low-priority pods (VICTIMS_PER_NODE of a quarter of its
# cpu each), each pending pod of high priority asking for a quarter too: it fits only by evicting one.
LOW_PRIORITY, HIGH_PRIORITY = "kubelab-bench-low", "kubelab-bench-high"
VICTIMS_PER_NODE = 4
QUARTER_CPU = str(int(NODE_CPU) // VICTIMS_PER_NODE)


def priority_class(name: str, value: int, run_id: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {BENCH_LABEL: run_id}}, "value": value,
            "description": "kubelab benchmark (deleted after the run)"}


def low_priority_pod(name: str, namespace: str, node_name: str, run_id: str) -> Obj:
    """A bound pod of LOW_PRIORITY taking a quarter of its node's cpu: a preemption victim."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {BENCH_LABEL: run_id}},
            "spec": {"nodeName": node_name, "priorityClassName": LOW_PRIORITY,
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": QUARTER_CPU, "memory": "128Mi"}}}]}}


def node(name: str, run_id: str, *, cpu: str = NODE_CPU, memory: str = NODE_MEMORY, pods: int = NODE_PODS,
         zone: str | None = None) -> Obj:
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    labels = {"kubernetes.io/hostname": name, BENCH_LABEL: run_id}
    if zone is not None:
        labels[ZONE_LABEL] = zone
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources),
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "benchmark node (no kubelet)"}],
                   "phase": "Running"},
    }


def zone_of(workload: str, i: int) -> str | None:
    """The zone of node i for ``workload`` (round robin over WORKLOAD_ZONES), None when it reads no zones."""
    zones = WORKLOAD_ZONES.get(workload)
    return f"zone-{i % zones}" if zones else None


def pending_pod(name: str, namespace: str, scheduler_name: str, run_id: str, *,
                node_selector: dict[str, str] | None = None, workload: str = "plain", index: int = 0) -> Obj:
    """A pod for the scheduler to place. It passes the restricted Pod Security level, so a real cluster's
    admission accepts it in any namespace, and keeps the service account token a pod gets by default (the
    projected volume is a fifth of what the API server sends a scheduler per pod). Its ``workload``, as
    upstream scheduler_perf's templates have them (the pods labelled ``group=spread-out``, selecting each
    other by it): "anti-affinity" refuses a node holding another of them (required podAntiAffinity on
    kubernetes.io/hostname, a Deployment spread one replica per node); "preferred-affinity" prefers a node
    holding one (preferred podAffinity, weight 1, on kubernetes.io/hostname); "zone-affinity" puts pod
    ``index`` in group g<index mod GROUPS> (label ``group``), preferring a zone holding its group (preferred
    podAffinity, weight 100, on topology.kubernetes.io/zone; nodes in 10 zones); "spread" keeps their zones
    within one pod of each other (topologySpreadConstraints maxSkew 1 on topology.kubernetes.io/zone,
    DoNotSchedule); "preemption" is of HIGH_PRIORITY and asks for a quarter of a node's cpu (nodes full of
    low_priority_pod victims); "plain" carries none of these."""
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {', '.join(WORKLOADS)}, got {workload!r}")
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
    selector = {"matchLabels": {"group": GROUP}}
    if workload == "zone-affinity":
        labels["group"] = f"g{index % GROUPS}"
        selector = {"matchLabels": {"group": labels["group"]}}
    elif workload != "plain":
        labels["group"] = GROUP
    if workload == "anti-affinity":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}}
    elif workload == "preferred-affinity":
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}}]}}
    elif workload == "zone-affinity":
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": ZONE_LABEL}}]}}
    elif workload == "preemption":
        spec["priorityClassName"] = HIGH_PRIORITY
        resources = {"cpu": QUARTER_CPU, "memory": "500Mi"}
        spec["containers"][0]["resources"] = {"requests": resources, "limits": dict(resources)}
    elif workload == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE_LABEL,
                                              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]
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
