"""NodeAffinity: ``spec.nodeSelector`` and required node affinity rule nodes out; preferred node affinity
terms add their weights to a node's score (highest total scores 100).

Operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels; matchFields on metadata.name. Terms are
ORed, expressions inside a term ANDed; a Gt/Lt against a label that is not an integer does not match.

When every required term names its nodes (``matchFields`` ``metadata.name`` ``In``), PreFilter narrows the
candidates to those nodes, as kube-scheduler's PreFilterResult (node_affinity.go): the other nodes are not
filtered and fail "node(s) didn't satisfy plugin(s) [NodeAffinity]"; names that intersect to nothing in
every term reject the pod up front ("pod affinity terms conflict").
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework import Args, ClusterEvent, Code, Plugin, Status, default_normalize
from scheduler.model import NodeInfo, NodeSelector, PodInfo, PreferredTerm

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"
CONFLICT = "pod affinity terms conflict"  # kube-scheduler's errReasonConflict
_REJECT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CONFLICT,), NAME)


@dataclass(frozen=True, slots=True)
class _Required:
    selector: tuple[tuple[str, str], ...]
    affinity: NodeSelector | None
    nodes: frozenset[str] | None = None  # the nodes the terms name, or None: any node may match


def pre_filter(pod: PodInfo, args: Args) -> _Required | Status | None:
    if not pod.node_selector and pod.required_node_affinity is None:
        return None
    affinity = pod.required_node_affinity
    nodes = named_nodes(affinity) if affinity is not None else None
    if nodes is not None and not nodes:
        return _CONFLICT
    return _Required(tuple(pod.node_selector.items()), affinity, nodes)


def named_nodes(affinity: NodeSelector) -> frozenset[str] | None:
    """The nodes required affinity can match at all, when every term names them: within a term the
    intersection of its ``metadata.name In`` lists, across terms their union. None when some term names no
    node (terms are ORed, so any node may match it)."""
    union: set[str] = set()
    for term in affinity.terms:
        names: frozenset[str] | None = None
        for req in term.match_fields:
            if req.key == "metadata.name" and req.operator == "In":
                names = req.values if names is None else names & req.values
        if names is None:
            return None
        union |= names
    return frozenset(union) if affinity.terms else None


def pre_filter_nodes(required: _Required) -> frozenset[str] | None:
    return required.nodes


def filter_node(required: _Required, node: NodeInfo) -> Status | None:
    labels = node.labels
    for key, value in required.selector:
        if labels.get(key) != value:
            return _REJECT
    if required.affinity is not None and not required.affinity.matches(node.name, labels):
        return _REJECT
    return None


def filter_batch(required: _Required, nodes: list[NodeInfo]) -> list[Status | None] | None:
    """filter_node over many nodes; a nodeSelector of one label and no required affinity (the common form)
    is one comprehension that only reads labels, instead of a call per node."""
    if required.affinity is not None or len(required.selector) != 1:
        return [filter_node(required, node) for node in nodes]
    ((key, value),) = required.selector
    matches = [node.labels.get(key) == value for node in nodes]
    if False not in matches:
        return None
    return [None if match else _REJECT for match in matches]


def pre_score(pod: PodInfo, args: Args) -> tuple[PreferredTerm, ...] | None:
    return pod.preferred_node_affinity or None


def score_node(preferred: tuple[PreferredTerm, ...], node: NodeInfo) -> int:
    """Raw score: sum of the weights of the preferred terms this node matches."""
    return sum(p.weight for p in preferred if p.term.matches(node.name, node.labels))


def normalize(scores: list[int], args: Args) -> None:
    default_normalize(scores)


# A node labelled or added, or the pod's node selector or required affinity changed.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED
              | ClusterEvent.POD_NODE_AFFINITY_CHANGED)

PLUGIN = Plugin(NAME, pre_filter=pre_filter, filter_node=filter_node, pre_score=pre_score,
                score_node=score_node, normalize=normalize, filter_batch=filter_batch,
                requeue_on=REQUEUE_ON, pre_filter_nodes=pre_filter_nodes)
