"""The in-tree GangScheduling (Workload API PodGroup, ``spec.schedulingGroup``) and the user-written gang plugin of
examples/coscheduling (PodGroup CRD scheduling.x-k8s.io, a pod label) agree on what "whole" means: the same gangs
on the same cluster come out the same, all bound, none bound, or (minCount below the gang's size) as many as fit
and at least minCount. Run on small clusters of our own, and on every gang kube-scheduler's recording holds."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from scheduler.feature_gates import parse_feature_gates
from scheduler.framework import in_tree_registry, load_registry
from scheduler.plugins import default_plugins
from scheduler.plugins.gang_scheduling import PODGROUPS
from scheduler.testing import Cycles
from scheduler.testing.builders import Cluster, cluster_from_yaml, pod_object
from tests.gang_corpus import gang_files, gang_folder, read
from tests.gang_corpus import replay as replay_in_tree

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coscheduling"
COSCHEDULING_GROUPS = "scheduling.x-k8s.io/v1alpha1/podgroups"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
GATES = parse_feature_gates("GenericWorkload=true,GangScheduling=true")


def _coscheduling_config(base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (default: one default profile) with Coscheduling enabled and PrioritySort replaced by its order."""
    config = copy.deepcopy(base) if base else {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                               "kind": "KubeSchedulerConfiguration",
                                               "profiles": [{"schedulerName": "default-scheduler"}]}
    for profile in config["profiles"]:
        plugins = profile.setdefault("plugins", {})
        plugins.setdefault("multiPoint", {}).setdefault("enabled", []).append({"name": "Coscheduling"})
        plugins.setdefault("queueSort", {}).setdefault("disabled", []).append({"name": "PrioritySort"})
    return config


def _as_coscheduling(pod: dict[str, Any], group: str) -> dict[str, Any]:
    """The same pod joining the example's gang: its label instead of spec.schedulingGroup."""
    out = copy.deepcopy(pod)
    out["spec"].pop("schedulingGroup", None)
    out["metadata"].setdefault("labels", {})[COSCHEDULING_LABEL] = group
    return out


def _coscheduling_group(name: str, namespace: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-11-28T10:00:00Z"},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 300}}


def _bound(sim: Cycles, pods: list[dict[str, Any]]) -> int:
    return sum(f"{p['metadata']['namespace']}/{p['metadata']['name']}" in sim.placements for p in pods)


def _outcome(bound: int, size: int, minimum: int) -> str:
    return "all" if bound == size else "none" if bound == 0 else f"{bound} (>= minCount)" if bound >= minimum \
        else f"{bound} (< minCount: not whole)"


NODES = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""

# (gangs, one after another on the same cluster: (size, minCount, cpu per pod)); the cluster holds 5 pods of 2 cpu
SCENARIOS = {
    "fits": [(4, 4, "2")],
    "one pod too many": [(6, 6, "2")],
    "no node takes one": [(2, 2, "5")],
    "minCount below size": [(7, 3, "2")],
    "minCount below size, too few fit": [(7, 6, "2")],
    "second gang finds the room taken": [(3, 3, "2"), (3, 3, "2")],
    "second gang fits beside the first": [(3, 3, "2"), (2, 2, "2")],
    "many small": [(5, 5, "1"), (4, 4, "1"), (6, 6, "1")],
}


def _pods(gang: str, size: int, cpu: str) -> list[dict[str, Any]]:
    return [pod_object(name=f"{gang}-{i}", requests={"cpu": cpu, "memory": "128Mi"},
                       spec={"schedulingGroup": {"podGroupName": gang}}) for i in range(size)]


@pytest.mark.parametrize("name", SCENARIOS)
def test_same_gangs_same_outcome_on_our_clusters(name):
    gangs = [(f"g{i}", *spec) for i, spec in enumerate(SCENARIOS[name])]
    registry = in_tree_registry().with_defaults(default_plugins(GATES.enabled))
    in_tree = Cycles(cluster_from_yaml(NODES), registry=registry)
    example = Cycles(cluster_from_yaml(NODES), registry=load_registry([str(EXAMPLE)], entry_points=False),
                     config=_coscheduling_config())
    ours, theirs = [], []
    for gang, size, minimum, cpu in gangs:
        pods = _pods(gang, size, cpu)
        in_tree.put_object(PODGROUPS, {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                                       "metadata": {"name": gang, "namespace": "default"},
                                       "spec": {"schedulingPolicy": {"gang": {"minCount": minimum}}}})
        example.put_object(COSCHEDULING_GROUPS, _coscheduling_group(gang, "default", minimum))
        for pod in pods:
            in_tree.add_pod(pod)
            example.add_pod(_as_coscheduling(pod, gang))
        in_tree.run_until_idle()
        example.run_until_idle()
        ours.append(_outcome(_bound(in_tree, pods), size, minimum))
        theirs.append(_outcome(_bound(example, pods), size, minimum))
    assert ours == theirs
    assert not any("not whole" in o for o in ours)


@pytest.mark.parametrize("path", gang_files(), ids=lambda p: p.stem)
def test_same_outcome_on_the_recorded_gangs(path):
    gang_folder()
    doc = read(path)
    differences = []
    for probe in doc["probes"]:
        group = probe["podgroup"]["metadata"]
        minimum = probe["podgroup"]["spec"]["schedulingPolicy"]["gang"]["minCount"]
        size = len(probe["pods"])
        ours = _outcome(_bound(replay_in_tree(doc, probe), probe["pods"]), size, minimum)
        example = _replay_example(doc, probe, group["name"], group["namespace"], minimum)
        theirs = _outcome(_bound(example, probe["pods"]), size, minimum)
        if ours != theirs:
            differences.append(f"gang {probe['index']} ({probe['feature']}): in-tree {ours}, Coscheduling {theirs}")
    assert not differences, "\n".join(differences)


def _replay_example(doc: dict[str, Any], probe: dict[str, Any], name: str, namespace: str, minimum: int) -> Cycles:
    """The recorded gang run through the example's Coscheduling instead of GangScheduling."""
    from scheduler.model import NodeInfo, PodInfo

    objects = doc["objects"]
    nodes = {n["metadata"]["name"]: NodeInfo.from_api(n) for n in objects["nodes"]}
    for pod in objects["pods"]:
        nodes[pod["spec"]["nodeName"]].add_pod(PodInfo.from_api(pod_object(copy.deepcopy(pod))))
    cluster = Cluster(nodes=list(nodes.values()),
                      namespaces={ns["metadata"]["name"]: {} for ns in objects["namespaces"]})
    sim = Cycles(cluster, registry=load_registry([str(EXAMPLE)], entry_points=False),
                 config=_coscheduling_config(doc["config"]["kubeSchedulerConfiguration"]),
                 objects={COSCHEDULING_GROUPS: [_coscheduling_group(name, namespace, minimum)]})
    for pod in probe["pods"]:
        sim.add_pod(_as_coscheduling(pod_object(copy.deepcopy(pod)), name))
    sim.run_until_idle()
    return sim
