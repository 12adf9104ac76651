"""LeastLoaded: prefer the node with the least load, or with ``strategy: MostAllocated`` the most
(bin-packing). Score only.

Load is, by ``mode``:
- ``podCount`` (default): pods counted on the node (bound and assumed);
- ``requestedResources``: the mean of the cpu and memory fractions of allocatable that pods request,
  the incoming pod included (containers without requests count 100m / 200Mi, as in kube-scheduler).

Scores are min-max normalised over the feasible nodes: the least loaded get 100, the most loaded 0,
rounding down, so only nodes tied for the least load score 100. With this plugin deciding (alone, or
other scores equal) and ties broken uniformly at random, placing pods one by one keeps the pod counts
of the scored nodes within one of each other. On clusters over 100 nodes the framework scores a sample
(percentageOfNodesToScore); set it to 100 to spread over every node.

A bundled example of a plugin of one's own: it lives in its own folder outside the scheduler package, uses
only the public API (``scheduler.framework``, ``scheduler.model``) and is loaded like any user plugin,
``python -m scheduler --plugins plugins/least_loaded``; its tests are in ``tests/`` beside it.
"""

from __future__ import annotations

from typing import Literal

from scheduler.framework import Args, Plugin, min_max_normalize
from scheduler.model import NodeInfo, PodInfo

NAME = "LeastLoaded"
_PPM = 1_000_000  # load fractions in parts per million keep integer maths and fine resolution


class LeastLoadedArgs(Args):
    mode: Literal["podCount", "requestedResources"] = "podCount"
    strategy: Literal["LeastAllocated", "MostAllocated"] = "LeastAllocated"


def pre_score(pod: PodInfo, args: LeastLoadedArgs) -> tuple[bool, int, int]:
    return args.mode == "podCount", pod.non_zero_milli_cpu, pod.non_zero_memory


def score_node(state: tuple[bool, int, int], node: NodeInfo) -> int:
    """Raw load (higher = more loaded); normalize() turns it into a 0..100 score."""
    by_count, milli_cpu, memory = state
    if by_count:
        return node.pod_count
    alloc, used = node.allocatable, node.non_zero_requested
    cpu = (used.milli_cpu + milli_cpu) * _PPM // alloc.milli_cpu if alloc.milli_cpu else _PPM
    mem = (used.memory + memory) * _PPM // alloc.memory if alloc.memory else _PPM
    return (cpu + mem) // 2


def score_batch(state: tuple[bool, int, int], nodes: list[NodeInfo]) -> list[int]:
    if state[0]:
        return [node.pod_count for node in nodes]
    return [score_node(state, node) for node in nodes]


def normalize(scores: list[int], args: LeastLoadedArgs) -> None:
    min_max_normalize(scores, lower_is_better=args.strategy == "LeastAllocated")


# The one way a plugin module declares its plugins (scheduler.framework.registry).
PLUGINS = [Plugin(NAME, args=LeastLoadedArgs, pre_score=pre_score, score_node=score_node,
                 normalize=normalize, score_batch=score_batch)]
