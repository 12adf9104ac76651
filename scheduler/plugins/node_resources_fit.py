"""NodeResourcesFit: a node fits if its allocatable minus what its counted pods request covers the pod's
effective request (cpu, memory, ephemeral-storage, extended resources and a pod slot); init containers,
pod-level resources and pod overhead are already folded into ``PodInfo.requests``.

Score (kube-scheduler's scoringStrategy): LeastAllocated (default) favours nodes with more room,
MostAllocated packs nodes; both per resource (cpu and memory, weight 1 each, by default), averaged by
weight. Scoring counts a container with no cpu/memory request as 100m / 200Mi, as kube-scheduler does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from scheduler.framework import (
    MAX_NODE_SCORE,
    Args,
    ClusterEvent,
    Code,
    Plugin,
    Status,
    per_node_memo,
)
from scheduler.model import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PodInfo, Resources

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"


class ResourceWeight(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    weight: int = Field(1, ge=1, le=100)


class ScoringStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["LeastAllocated", "MostAllocated"] = "LeastAllocated"
    resources: tuple[ResourceWeight, ...] = (ResourceWeight(name=CPU), ResourceWeight(name=MEMORY))


class NodeResourcesFitArgs(Args):
    ignoredResources: tuple[str, ...] = ()
    scoringStrategy: ScoringStrategy = ScoringStrategy()


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


# Shared Status objects for the common single reasons, by (reason, code).
_SINGLE = {
    (reason, code): Status(code, (reason,), NAME)
    for reason in (TOO_MANY_PODS, *(insufficient(r) for r in (CPU, MEMORY, EPHEMERAL_STORAGE)))
    for code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
}


@dataclass(frozen=True, slots=True)
class _Request:
    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalar: tuple[tuple[str, int], ...]
    empty: bool


def pre_filter(pod: PodInfo, args: NodeResourcesFitArgs) -> _Request | Status:
    r = pod.requests
    ignored = set(args.ignoredResources)
    scalar = tuple((name, value) for name, value in r.scalar.items() if value and name not in ignored)
    empty = not (r.milli_cpu or r.memory or r.ephemeral_storage or scalar)
    return _Request(r.milli_cpu, r.memory, r.ephemeral_storage, scalar, empty)


def filter_node(req: _Request, node: NodeInfo) -> Status | None:
    """None when the node fits, else every shortage in kube-scheduler's order ("Too many pods", cpu, memory,
    ephemeral-storage, extended resources): its message lists them all ("Insufficient cpu, Insufficient
    memory"). Unresolvable when the pod asks for more of a resource than the node has even empty
    (kube-scheduler since 1.34, kubernetes/kubernetes#131345): evicting pods cannot help there, so preemption
    leaves the node alone. Too many pods stays resolvable."""
    alloc = node.allocatable
    used = node.requested
    reasons = []
    beyond = False  # the pod asks for more than the node's allocatable
    if node.pod_count + 1 > alloc.pods:
        reasons.append(TOO_MANY_PODS)
    if not req.empty:
        if req.milli_cpu and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
            reasons.append(insufficient(CPU))
            beyond = req.milli_cpu > alloc.milli_cpu
        if req.memory and req.memory > alloc.memory - used.memory:
            reasons.append(insufficient(MEMORY))
            beyond = beyond or req.memory > alloc.memory
        if req.ephemeral_storage and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
            reasons.append(insufficient(EPHEMERAL_STORAGE))
            beyond = beyond or req.ephemeral_storage > alloc.ephemeral_storage
        for name, value in req.scalar:
            if value > alloc.scalar.get(name, 0) - used.scalar.get(name, 0):
                reasons.append(insufficient(name))
                beyond = beyond or value > alloc.scalar.get(name, 0)
    if not reasons:
        return None
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if beyond else Code.UNSCHEDULABLE
    if len(reasons) == 1 and (reasons[0], code) in _SINGLE:
        return _SINGLE[reasons[0], code]
    return Status(code, tuple(reasons), NAME)


def filter_batch(req: _Request, nodes: list[NodeInfo]) -> list[Status | None] | None:
    """filter_node over many nodes: one comprehension that only compares finds the nodes that fall short
    (the common answer is none), and filter_node builds the reasons for those alone."""
    if req.scalar:
        return [filter_node(req, node) for node in nodes]
    # A resource the pod does not request never rejects a node (even an over-committed one): -inf > x is
    # always false, which gives filter_node's "req.x and req.x > free" without a branch per node.
    cpu = req.milli_cpu or _NEVER
    mem = req.memory or _NEVER
    eph = req.ephemeral_storage or _NEVER

    def falls_short(nodes: list[NodeInfo]) -> list[bool]:
        return [
            node.pod_count >= alloc.pods
            or cpu > alloc.milli_cpu - used.milli_cpu
            or mem > alloc.memory - used.memory
            or eph > alloc.ephemeral_storage - used.ephemeral_storage
            for node in nodes
            for alloc, used in ((node.allocatable, node.requested),)
        ]

    short = per_node_memo(f"{NAME} short {cpu} {mem} {eph}", nodes, falls_short)
    if True not in short:  # a scan in C: the common answer
        return None
    return [filter_node(req, node) if no else None for node, no in zip(nodes, short, strict=True)]


_NEVER = float("-inf")


# score ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FitScoring:
    most: bool
    default_resources: bool  # cpu and memory with equal weights: the fast path
    resources: tuple[tuple[str, int], ...]
    milli_cpu: int  # non-zero requests, as scored
    memory: int
    requests: Resources


def pre_score(pod: PodInfo, args: NodeResourcesFitArgs) -> _FitScoring:
    strategy = args.scoringStrategy
    resources = tuple((r.name, r.weight) for r in strategy.resources)
    default = len(resources) == 2 and {n for n, _ in resources} == {CPU, MEMORY} \
        and resources[0][1] == resources[1][1]
    # kube-scheduler 1.36 scores the pod's containers, not its pod-level resources (its Fit scorer is built
    # without the PodLevelResources feature; the filter counts them), so the pod-level figures stay out here.
    cpu, memory = pod.container_non_zero or (pod.non_zero_milli_cpu, pod.non_zero_memory)
    return _FitScoring(strategy.type == "MostAllocated", default, resources, cpu, memory, pod.requests)


def _least(requested: int, capacity: int) -> int:
    if requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def score_node(s: _FitScoring, node: NodeInfo) -> int:
    fn = _most if s.most else _least
    total = weights = 0
    for name, weight in s.resources:
        requested, capacity = _amounts(s, node, name)
        if capacity == 0:
            continue  # a node without the resource does not count it (kube-scheduler does the same)
        total += fn(requested, capacity) * weight
        weights += weight
    return total // weights if weights else 0


def score_batch(s: _FitScoring, nodes: list[NodeInfo]) -> list[int]:
    """score_node over many nodes. The default resources (cpu and memory, equal weights) are scored by one
    comprehension per strategy, because this runs for every scored node: _least and _most inlined, the
    mean of two equal weights being the plain mean. A zero capacity divides by zero there, and the whole
    batch then takes score_node's general path, which leaves such a resource out."""
    if not s.default_resources:
        return [score_node(s, node) for node in nodes]
    pod_cpu, pod_mem = s.milli_cpu, s.memory

    def most(nodes: list[NodeInfo]) -> list[int]:
        return [
            (min(nz.milli_cpu + pod_cpu, cpu_cap) * 100 // cpu_cap
             + min(nz.memory + pod_mem, mem_cap) * 100 // mem_cap) // 2
            for node in nodes
            for cpu_cap, mem_cap, nz in ((node.allocatable.milli_cpu, node.allocatable.memory,
                                          node.non_zero_requested),)
        ]

    def least(nodes: list[NodeInfo]) -> list[int]:
        # 0 when over capacity, written with := instead of max(): a builtin call per node costs more than
        # the arithmetic. A positive free amount implies a positive capacity; "0 // capacity" raises for a
        # zero one.
        return [
            ((free_cpu * 100 // cpu_cap if (free_cpu := (cpu_cap := alloc.milli_cpu) - nz.milli_cpu - pod_cpu) > 0
              else 0 // cpu_cap)
             + (free_mem * 100 // mem_cap if (free_mem := (mem_cap := alloc.memory) - nz.memory - pod_mem) > 0
                else 0 // mem_cap)) // 2
            for node in nodes
            for alloc, nz in ((node.allocatable, node.non_zero_requested),)
        ]

    try:
        return per_node_memo(f"{NAME} {'most' if s.most else 'least'} {pod_cpu} {pod_mem}", nodes,
                             most if s.most else least)
    except ZeroDivisionError:
        return [score_node(s, node) for node in nodes]


def _amounts(s: _FitScoring, node: NodeInfo, name: str) -> tuple[int, int]:
    alloc, nz, used = node.allocatable, node.non_zero_requested, node.requested
    if name == CPU:
        return nz.milli_cpu + s.milli_cpu, alloc.milli_cpu
    if name == MEMORY:
        return nz.memory + s.memory, alloc.memory
    if name == EPHEMERAL_STORAGE:
        return used.ephemeral_storage + s.requests.ephemeral_storage, alloc.ephemeral_storage
    return used.scalar.get(name, 0) + s.requests.scalar.get(name, 0), alloc.scalar.get(name, 0)


# Room freed (a pod gone, more allocatable), a node added, or the pod asking for less.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_ALLOCATABLE_CHANGED
              | ClusterEvent.ASSIGNED_POD_DELETED | ClusterEvent.POD_REQUESTS_CHANGED)

PLUGIN = Plugin(NAME, args=NodeResourcesFitArgs, pre_filter=pre_filter, filter_node=filter_node,
                pre_score=pre_score, score_node=score_node, filter_batch=filter_batch,
                score_batch=score_batch, requeue_on=REQUEUE_ON)
