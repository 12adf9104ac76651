"""NodeCost: keep pods off nodes that cost more than they may, and prefer the cheapest node.

Nodes say what they cost in an annotation, ``example.com/hourly-cost: "0.42"`` (dollars per hour). A pod may
cap it with ``example.com/max-hourly-cost: "0.30"``: nodes above the cap, and nodes whose cost is unknown, do not
fit it. Every pod prefers cheaper nodes; nodes of unknown cost score lowest. Both annotation keys are args.

The tutorial in docs/writing-a-plugin.md builds this plugin step by step.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from pydantic import Field

from scheduler.framework import MAX_NODE_SCORE, Args, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo, PodSpecError

NAME = "NodeCost"
UNKNOWN = -1  # the raw score of a node whose cost is unknown


class NodeCostArgs(Args):
    costAnnotation: str = Field("example.com/hourly-cost", min_length=1)
    maxCostAnnotation: str = Field("example.com/max-hourly-cost", min_length=1)


def millidollars(text: str) -> int | None:
    """'0.42' -> 420; None for anything that is not a non-negative number."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite() or value < 0:
        return None
    return int(value * 1000)


def node_cost(node: NodeInfo, key: str) -> int | None:
    """The node's hourly cost in millidollars, from an annotation the scheduler's model does not parse."""
    value = node.raw.get("metadata", {}).get("annotations", {}).get(key)
    return None if value is None else millidollars(value)


def pre_filter(pod: PodInfo, args: NodeCostArgs):
    """Once per pod: its cap, with the two ways a node can fail it; None when the pod sets no cap."""
    text = pod.annotations.get(args.maxCostAnnotation)
    if text is None:
        return None
    cap = millidollars(text)
    if cap is None:
        raise PodSpecError(f"metadata.annotations[{args.maxCostAnnotation}]",
                           f"{text!r} is not a cost; write dollars per hour, such as '0.30'")
    too_expensive = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                           (f"node(s) cost more than the pod's {args.maxCostAnnotation}",), NAME)
    unknown = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                     (f"node(s) had no readable {args.costAnnotation} annotation",), NAME)
    return cap, args.costAnnotation, too_expensive, unknown


def filter_node(state, node: NodeInfo) -> Status | None:
    """Per node: None when it fits the pod's cap, else why not."""
    cap, key, too_expensive, unknown = state
    cost = node_cost(node, key)
    if cost is None:
        return unknown
    return too_expensive if cost > cap else None


def pre_score(pod: PodInfo, args: NodeCostArgs) -> str:
    return args.costAnnotation  # every pod prefers cheaper nodes


def score_node(key: str, node: NodeInfo) -> int:
    cost = node_cost(node, key)
    return UNKNOWN if cost is None else cost


def normalize(scores: list[int], args: NodeCostArgs) -> None:
    """The cheapest node 100, the dearest 0, linearly; nodes of unknown cost 0."""
    known = [s for s in scores if s != UNKNOWN]
    if not known:
        scores[:] = [0] * len(scores)
        return
    low, high = min(known), max(known)
    span = high - low
    scores[:] = [0 if s == UNKNOWN else MAX_NODE_SCORE if span == 0 else MAX_NODE_SCORE * (high - s) // span
                 for s in scores]


PLUGINS = [
    Plugin(
        NAME,
        args=NodeCostArgs,
        pre_filter=pre_filter,
        filter_node=filter_node,
        pre_score=pre_score,
        score_node=score_node,
        normalize=normalize,
        # A pod this plugin rejected may fit once a node's or the pod's annotations change (or a node is added).
        requeue_on_fields=("node.metadata.annotations", "pod.metadata.annotations"),
    ),
]
