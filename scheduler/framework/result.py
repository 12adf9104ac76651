"""The outcome of one scheduling decision (``ScheduleResult``) and kube-scheduler's words for a pod no node fits.

The FailedScheduling message has kube-scheduler's exact form (FitError.Error in
pkg/scheduler/framework/types.go): "0/3 nodes are available: 1 node(s) had untolerated taint(s),
2 Insufficient cpu." -- "<count> <reason>" strings sorted as strings, joined by ", ", ending with ".". The
scheduling cycle appends what the PostFilter plugins said (scheduler.framework.post_filter.run_post_filters).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.framework.status import Status

__all__ = ["NO_NODES_MESSAGE", "ScheduleResult", "fit_error_message"]

NO_NODES_MESSAGE = "no nodes available to schedule pods"  # kube-scheduler's ErrNoNodesAvailable


def fit_error_message(num_all_nodes: int, failures: Mapping[str, Status],
                      pre_filter_rejection: Status | None = None) -> str:
    """kube-scheduler's FailedScheduling text for a pod no node fits; a PreFilter rejection's reasons stand
    alone ("0/3 nodes are available: persistentvolumeclaim "data" not found."), not counted per node."""
    if pre_filter_rejection is not None:
        return f"0/{num_all_nodes} nodes are available: {pre_filter_rejection.reason}."
    counts: Counter[str] = Counter()
    for status in failures.values():
        counts.update(status.reasons)
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
    message = f"0/{num_all_nodes} nodes are available:"
    if reasons:
        message += f" {', '.join(reasons)}."
    return message


@dataclass(slots=True)
class ScheduleResult:
    """The outcome of one decision, with what the logs and the placement explainer need."""

    pod_key: str
    node_name: str | None
    num_all_nodes: int
    evaluated_nodes: int
    feasible_nodes: list[str] = field(default_factory=list)
    failures: dict[str, Status] = field(default_factory=dict)
    scores: dict[str, list[int]] = field(default_factory=dict)  # plugin -> weighted, aligned to feasible
    totals: list[int] = field(default_factory=list)
    message: str = ""  # the filters' part of the FailedScheduling message when node_name is None
    pre_filter_rejection: Status | None = None  # a PreFilter refused the pod whatever the node
    _index: dict[str, int] | None = field(default=None, repr=False, compare=False)

    @property
    def scheduled(self) -> bool:
        return self.node_name is not None

    @property
    def rejected_by(self) -> frozenset[str]:
        """The filter plugins that rejected a node."""
        return frozenset(status.plugin for status in self.failures.values())

    def node_scores(self, node_name: str) -> dict[str, int]:
        """Weighted score of each plugin for one feasible node ({} if it was not scored)."""
        if not self.totals:
            return {}
        if self._index is None:  # built on first use: debug logging asks for every node
            self._index = {name: i for i, name in enumerate(self.feasible_nodes)}
        i = self._index.get(node_name)
        if i is None:
            return {}
        return self._scores_at(i)

    def _scores_at(self, i: int) -> dict[str, int]:
        return {plugin: scores[i] for plugin, scores in self.scores.items()}

    def _top_indices(self, n: int) -> list[int]:
        # nlargest is documented as sorted(..., reverse=True)[:n], which is stable: ties keep feasible order.
        # It costs O(feasible) instead of a full sort; explain() runs for every decision the log reports.
        totals = self.totals
        return heapq.nlargest(n, range(len(totals)), key=totals.__getitem__)

    def top(self, n: int = 3) -> list[tuple[str, int]]:
        """The n best (node, total score), best first."""
        return [(self.feasible_nodes[i], self.totals[i]) for i in self._top_indices(n)]

    def explain(self, n: int = 3) -> str:
        """One line for the log: the chosen node and why, or why nothing fits."""
        if self.node_name is None:
            return self.message
        if not self.totals:
            return (f"{self.node_name}: the only feasible node of {self.evaluated_nodes} evaluated "
                    f"({self.num_all_nodes} in the cluster)")
        parts = []
        for i in self._top_indices(n):
            detail = ", ".join(f"{plugin} {score}" for plugin, score in self._scores_at(i).items())
            parts.append(f"{self.feasible_nodes[i]}={self.totals[i]} ({detail})")
        return (f"{self.node_name}: {len(self.feasible_nodes)} feasible of {self.evaluated_nodes} evaluated; "
                f"top: {'; '.join(parts)}")
