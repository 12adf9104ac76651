"""NodeResourcesBalancedAllocation: prefer nodes whose resource use the pod makes more even.

kube-scheduler 1.36's formula (noderesources/balanced_allocation.go, kubernetes/kubernetes#135573): a node's
balance is ``(1 - std) * 100`` rounded down, where ``std`` is the standard deviation of the fractions
requested/allocatable of each resource (cpu and memory by default), each capped at 1, a resource the node
does not offer left out (for two fractions ``std`` is half their difference, for one it is 0). The score is
how much placing the pod changes that balance, ``50 + (50 + with - without) // 2`` with the balance counting
the pod (``with``) and without it: 75 when the pod changes nothing, towards 100 when it evens the node out,
towards 50 when it unbalances it. (Before 1.36 the score was the balance with the pod alone.)
Requests are the pods' real requests (a container without one counts 0, unlike NodeResourcesFit's scoring),
and a pod requesting none of the resources is not scored by this plugin (every node 0), as kube-scheduler
skips best-effort pods so they do not pile onto one node. The raw score is final: no normalisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from scheduler.framework import MAX_NODE_SCORE, Args, Plugin, per_node_memo
from scheduler.model import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PodInfo, Resources

NAME = "NodeResourcesBalancedAllocation"


class ResourceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    weight: int = Field(1, ge=1, le=100)  # accepted as kube-scheduler does; the formula does not weigh


class BalancedAllocationArgs(Args):
    resources: tuple[ResourceSpec, ...] = (ResourceSpec(name=CPU), ResourceSpec(name=MEMORY))


@dataclass(frozen=True, slots=True)
class _Requests:
    names: tuple[str, ...]
    amounts: tuple[int, ...]  # the pod's request of each resource, aligned with names
    cpu_and_memory: bool  # the default resources: score_batch's fast path


def _amount(resources: Resources, name: str) -> int:
    if name == CPU:
        return resources.milli_cpu
    if name == MEMORY:
        return resources.memory
    if name == EPHEMERAL_STORAGE:
        return resources.ephemeral_storage
    return resources.scalar.get(name, 0)


def pre_score(pod: PodInfo, args: BalancedAllocationArgs) -> _Requests | None:
    names = tuple(r.name for r in args.resources)
    amounts = tuple(_amount(pod.requests, name) for name in names)
    if not any(amounts):
        return None  # best-effort for these resources: kube-scheduler skips the plugin
    return _Requests(names, amounts, names == (CPU, MEMORY))


_HALF = MAX_NODE_SCORE // 2


def _balance(fractions: list[float]) -> int:
    """``(1 - std) * 100`` rounded down, for the fractions of the resources the node offers."""
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def score_node(req: _Requests, node: NodeInfo) -> int:
    with_pod, without_pod = [], []
    for name, amount in zip(req.names, req.amounts, strict=True):
        allocatable = _amount(node.allocatable, name)
        if allocatable == 0:
            continue
        used = _amount(node.requested, name)
        with_pod.append(min((used + amount) / allocatable, 1.0))
        without_pod.append(min(used / allocatable, 1.0))
    return _HALF + (_HALF + _balance(with_pod) - _balance(without_pod)) // 2


def score_batch(req: _Requests, nodes: list[NodeInfo]) -> list[int]:
    """score_node over many nodes: for cpu and memory, one comprehension with score_node's arithmetic in
    the same order (so the same floats), memoised per node (the balance without the pod is the node's own).
    A node without cpu or memory divides by zero, and the batch then takes score_node's general path, which
    leaves that resource out."""
    if not req.cpu_and_memory:
        return [score_node(req, node) for node in nodes]
    pod_cpu, pod_mem = req.amounts
    # min(fraction, 1.0) and abs() written as conditional expressions: a builtin call per node costs more
    # than the arithmetic.
    def scores(nodes: list[NodeInfo]) -> list[int]:
        return [
            _HALF + (_HALF
                     + int((1 - (d if (d := (c if (c := (used.milli_cpu + pod_cpu) / alloc.milli_cpu) < 1.0 else 1.0)
                                      - (m if (m := (used.memory + pod_mem) / alloc.memory) < 1.0 else 1.0)) >= 0
                                 else -d) / 2) * MAX_NODE_SCORE)
                     - int((1 - (d if (d := (c if (c := used.milli_cpu / alloc.milli_cpu) < 1.0 else 1.0)
                                      - (m if (m := used.memory / alloc.memory) < 1.0 else 1.0)) >= 0
                                 else -d) / 2) * MAX_NODE_SCORE)) // 2
            for node in nodes
            for alloc, used in ((node.allocatable, node.requested),)
        ]

    try:
        return per_node_memo(f"{NAME} {pod_cpu} {pod_mem}", nodes, scores)
    except ZeroDivisionError:
        return [score_node(req, node) for node in nodes]


PLUGIN = Plugin(NAME, args=BalancedAllocationArgs, pre_score=pre_score, score_node=score_node,
                score_batch=score_batch)
