"""Which of several best-scored nodes kube-scheduler 1.36 takes: with no extender configured, the first its
selectHost heap pops (every tie-breaker is 0, so the heap's shape decides); with one, any at random (the caller
draws)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["first_in_heap_order"]


def first_in_heap_order(totals: Sequence[int]) -> int:
    """The index of the node kube-scheduler's selectHost takes when no extender is configured: the first one
    its max-heap pops (``heap.Init`` then ``heap.Pop`` over the scores in feasible order, every tie-breaker 0).

    Go's heap.Init sifts each parent down from the last one to the root; a parent moves down only for a child
    with a strictly higher total, and goes to the left child unless the right one is strictly higher. So the
    root ends up holding: the root's own node if it has the best total, else the winner of the left subtree
    if the best total is there, else the right's -- the first best node in the preorder of the implicit
    binary tree (index i has children 2i+1 and 2i+2). Index i's path from the root is the binary form of
    i + 1 after its leading 1 (0 = left, 1 = right), and preorder is the order of these paths as strings (a
    path before its extensions). With ties at 2 and 3 the pick is 3, which lies under 1, left of 2.

    Found by walking down from the root (numbered from 1 here: node k has children 2k and 2k+1) into the
    left subtree whenever it holds a tied node, with a binary search per level over the sorted tied nodes:
    O(log^3 n) after the one pass that lists them.
    """
    best = max(totals)
    if totals[0] == best:
        return 0
    tied = [k for k, total in enumerate(totals, 1) if total == best]  # ascending, numbered from 1
    if len(tied) == 1:
        return tied[0] - 1
    last = len(totals)

    def holds_tied(k: int) -> bool:  # whether node k's subtree holds a tied node
        lo = hi = k
        while lo <= last:  # its nodes at each depth below k are lo..hi
            at = bisect_left(tied, lo)
            if at < len(tied) and tied[at] <= hi:
                return True
            lo, hi = 2 * lo, 2 * hi + 1
        return False

    k = 1
    while True:
        k = 2 * k if holds_tied(2 * k) else 2 * k + 1
        at = bisect_left(tied, k)
        if at < len(tied) and tied[at] == k:
            return k - 1
