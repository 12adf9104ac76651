"""What a resource miss needs, said once instead of once per node: for each resource NodeResourcesFit finds
short (cpu, memory, ephemeral-storage, pods, extended resources), what the pod asks, how many nodes have
less free, and the most any node has free and where ("no node has 3 cpu free; the most is 1.5 on node-7").
Free is what the scheduler counts: allocatable minus the requests of the pods on the node (NodeInfo), the
same arithmetic as the filter's, so the sentence and the verdicts never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labkit.natural import natural_key
from scheduler.model import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PodInfo
from scheduler.model.resources import PODS

FIT_PLUGIN = "NodeResourcesFit"
INSUFFICIENT = "Insufficient "
TOO_MANY_PODS = "Too many pods"
_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


@dataclass
class ResourceMiss:
    resource: str  # cpu, memory, ephemeral-storage, pods, or an extended resource's name
    asked: int  # in the resource's unit: millicores for cpu, bytes for memory and storage, a count otherwise
    short: int  # nodes with less free than asked (by NodeResourcesFit's verdicts)
    nodes: int  # nodes considered
    most_free: int
    most_free_node: str
    largest: int  # the most any node has allocatable: above it, no eviction can help
    largest_node: str

    @property
    def summary(self) -> str:
        asked, most = amount(self.resource, self.asked), amount(self.resource, self.most_free)
        what = "a free pod slot" if self.resource == PODS else f"{asked} {self.resource} free"
        if self.short >= self.nodes:
            text = f"no node has {what}; the most is {most} on {self.most_free_node}"
        else:
            text = (f"{self.short} of {self.nodes} nodes lack {what}; the most is {most} on "
                    f"{self.most_free_node} (which fails for another reason)")
        if self.asked > self.largest and self.resource != PODS:
            text += (f"; no node has {asked} even empty (the largest allocatable is "
                     f"{amount(self.resource, self.largest)} on {self.largest_node})")
        return text

    def as_json(self) -> dict[str, Any]:
        return {"resource": self.resource, "asked": self.asked, "asked_text": amount(self.resource, self.asked),
                "short": self.short, "nodes": self.nodes, "most_free": self.most_free,
                "most_free_text": amount(self.resource, self.most_free), "most_free_node": self.most_free_node,
                "largest": self.largest, "largest_node": self.largest_node, "summary": self.summary}


def amount(resource: str, value: int) -> str:
    """A resource amount as a person reads it: cpu in cores (1.5), bytes in binary units (2.5Gi)."""
    if resource == CPU:
        return f"{value / 1000:.3f}".rstrip("0").rstrip(".")
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for unit, size in _BINARY:
            if abs(value) >= size:
                return f"{value / size:.1f}".removesuffix(".0") + unit
    return str(value)


def short_resources(reasons: list[str]) -> list[str]:
    """The resources a node's reasons ("NodeResourcesFit: Insufficient cpu") say it lacks, in their order."""
    found = []
    for reason in reasons:
        plugin, _, said = reason.partition(": ")
        if plugin != FIT_PLUGIN:
            continue
        if said == TOO_MANY_PODS:
            found.append(PODS)
        elif said.startswith(INSUFFICIENT):
            found.append(said[len(INSUFFICIENT):])
    return found


def _asked(pod: PodInfo, resource: str) -> int:
    r = pod.requests
    return {CPU: r.milli_cpu, MEMORY: r.memory, EPHEMERAL_STORAGE: r.ephemeral_storage, PODS: 1}.get(
        resource, r.scalar.get(resource, 0))


def _free(node: NodeInfo, resource: str) -> tuple[int, int]:
    """(free, allocatable) of one resource on the node, as NodeResourcesFit counts them."""
    a, u = node.allocatable, node.requested
    if resource == PODS:
        return a.pods - node.pod_count, a.pods
    if resource == CPU:
        return a.milli_cpu - u.milli_cpu, a.milli_cpu
    if resource == MEMORY:
        return a.memory - u.memory, a.memory
    if resource == EPHEMERAL_STORAGE:
        return a.ephemeral_storage - u.ephemeral_storage, a.ephemeral_storage
    return a.scalar.get(resource, 0) - u.scalar.get(resource, 0), a.scalar.get(resource, 0)


def resource_misses(pod: PodInfo, nodes: list[NodeInfo], reasons: dict[str, list[str]]) -> list[ResourceMiss]:
    """One ResourceMiss per resource some node lacks for the pod (`reasons`: node name -> its filter reasons,
    as explain's verdicts hold them), in the order the filter names them."""
    short: dict[str, int] = {}
    for node_reasons in reasons.values():
        for resource in short_resources(node_reasons):
            short[resource] = short.get(resource, 0) + 1
    if not nodes:
        return []
    ordered = sorted(nodes, key=lambda n: natural_key(n.name))  # ties go to the first name in natural order
    misses = []
    for resource, count in short.items():
        free = [(_free(n, resource), n.name) for n in ordered]
        (most, _), most_node = max(free, key=lambda f: f[0][0])
        (_, largest), largest_node = max(free, key=lambda f: f[0][1])
        misses.append(ResourceMiss(resource, _asked(pod, resource), count, len(nodes), max(most, 0), most_node,
                                   largest, largest_node))
    return misses
