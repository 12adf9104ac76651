"""The per-node memo: values a batch form keeps on a NodeInfo between decisions.

``per_node_memo``: a batch form whose per-node value depends only on that node and a few numbers of
the pod (its requests, say) may keep the value on the node under a key naming the plugin and those numbers.
The snapshot hands every decision the same NodeInfo clone until its node changes (then a fresh clone, with
an empty memo), and each change empties the memo of the NodeInfo it changes: the next pod of the same kind
reads the value back instead of working it out again. The node a decision takes would then lack every
value at the next read, and a read that misses costs twice one that does not (nearly every read would, since
the node taken lies among the nodes read): so when the snapshot re-clones a changed node, ``carry_memo``
works out again on the new clone the values the old one held, for the kinds of pod read recently.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from scheduler.model import NodeInfo

__all__ = ["carry_memo", "per_node_memo"]

_MISSING = object()


def per_node_memo(key: str, nodes: list[NodeInfo], compute: Callable[[list[NodeInfo]], list[Any]]) -> list[Any]:
    """``compute(nodes)``, each node's value read from ``node.memo[key]`` where it is there and computed (in
    ``compute`` calls over the nodes without it) and kept there otherwise. ``key`` must name the plugin and
    everything of the pod the value depends on; the value may depend on nothing but the node besides.
    Make it a str: a str caches its hash, a tuple hashes its items again on every one of the lookups."""
    # One str object per kind: a lookup then matches the stored key by identity, where an equal str built
    # by another decision is compared byte by byte, reading that cold object for every node.
    key = sys.intern(key)
    if key not in _recent_kinds:
        _remember_kind(key, compute)
    try:
        return [node.memo[key] for node in nodes]  # every node known: a third of the cost of memo.get
    except KeyError:
        pass
    # Some node changed since this kind of pod last saw it (typically the one a decision took): the same
    # fast read, chunk by chunk, so that only a chunk holding such a node pays for memo.get.
    values: list[Any] = []
    for start in range(0, len(nodes), _MEMO_CHUNK):
        chunk = nodes[start:start + _MEMO_CHUNK]
        try:
            values += [node.memo[key] for node in chunk]
        except KeyError:
            values += _fill_memo(key, chunk, compute)
    return values


_MEMO_CHUNK = 64


def _fill_memo(key: str, nodes: list[NodeInfo], compute: Callable[[list[NodeInfo]], list[Any]]) -> list[Any]:
    values = [node.memo.get(key, _MISSING) for node in nodes]
    missing = [i for i, value in enumerate(values) if value is _MISSING]
    for i, value in zip(missing, compute([nodes[i] for i in missing]), strict=True):
        values[i] = value
        nodes[i].memo[key] = value
    return values


# key -> compute of the last kinds of pod per_node_memo was asked for (oldest first; an evicted kind comes
# back at its next read), for carry_memo: bounded, so that kinds no longer scheduled stop being worked out
# again on every change.
_recent_kinds: dict[str, Callable[[list[NodeInfo]], list[Any]]] = {}
_RECENT_KINDS = 32


def _remember_kind(key: str, compute: Callable[[list[NodeInfo]], list[Any]]) -> None:
    _recent_kinds[key] = compute
    if len(_recent_kinds) > _RECENT_KINDS:
        _recent_kinds.pop(next(iter(_recent_kinds)), None)


def carry_memo(old: NodeInfo, new: NodeInfo) -> None:
    """Fill ``new`` (a fresh clone of a node that changed) with the values ``old`` (its previous clone) held
    for recently read kinds of pod, worked out again on ``new``'s state: what the next read would otherwise
    compute after missing them."""
    for key in old.memo:
        compute = _recent_kinds.get(key)
        if compute is None:
            continue
        try:
            new.memo[key] = compute([new])[0]
        except Exception:  # noqa: BLE001, S112 - left to the plugin, which meets it reading this node
            continue
