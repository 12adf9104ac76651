"""Score normalisation helpers: rescale a plugin's raw scores to 0..MAX_NODE_SCORE in place."""

from __future__ import annotations

__all__ = ["MAX_NODE_SCORE", "default_normalize", "min_max_normalize"]

MAX_NODE_SCORE = 100


def default_normalize(scores: list[int], reverse: bool = False) -> None:
    """kube-scheduler's DefaultNormalizeScore: scale so the highest raw score becomes 100; with
    ``reverse`` a higher raw score is worse (100 - scaled). All zeros stay 0, or all become 100 reversed."""
    top = max(scores, default=0)
    if top == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, raw in enumerate(scores):
        scaled = MAX_NODE_SCORE * raw // top
        scores[i] = MAX_NODE_SCORE - scaled if reverse else scaled


def min_max_normalize(scores: list[int], lower_is_better: bool) -> None:
    """Map the best raw value to 100 and the worst to 0, linearly, rounding down: only nodes holding the
    best raw value get 100, so a random pick among the top never takes a worse node."""
    if not scores:
        return
    low, high = min(scores), max(scores)
    if low == high:
        scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    span = high - low
    if lower_is_better:
        scores[:] = [MAX_NODE_SCORE * (high - s) // span for s in scores]
    else:
        scores[:] = [MAX_NODE_SCORE * (s - low) // span for s in scores]
