"""DefaultPreemption: kube-scheduler's PostFilter plugin, as a descriptor and its args.

The plugin itself runs after the filters found no node (``scheduler.framework.preemption`` holds the algorithm, which
reads the profile's filters, the cluster and the PodDisruptionBudgets); here are only its name, its place in
the plugin registry and its pluginConfig args, validated as kube-scheduler's ValidateDefaultPreemptionArgs
(pkg/scheduler/apis/config/validation/validation_pluginargs.go).
"""

from __future__ import annotations

from pydantic import model_validator

from scheduler.framework import Args, Plugin

NAME = "DefaultPreemption"


class DefaultPreemptionArgs(Args):
    """How many nodes a preemption dry-runs at least: a percentage of the nodes it may help, and an absolute
    floor (kube-scheduler's defaults, 10% and 100)."""

    minCandidateNodesPercentage: int = 10
    minCandidateNodesAbsolute: int = 100

    @model_validator(mode="after")
    def _check(self) -> DefaultPreemptionArgs:
        problems = []
        if not 0 <= self.minCandidateNodesPercentage <= 100:
            problems.append(f"minCandidateNodesPercentage: {self.minCandidateNodesPercentage} is not in valid "
                            "range [0, 100]")
        if self.minCandidateNodesAbsolute < 0:
            problems.append(f"minCandidateNodesAbsolute: {self.minCandidateNodesAbsolute} is not in valid "
                            "range [0, inf)")
        if self.minCandidateNodesPercentage == 0 and self.minCandidateNodesAbsolute == 0:
            problems += ["minCandidateNodesPercentage: cannot be zero at the same time as minCandidateNodesAbsolute",
                         "minCandidateNodesAbsolute: cannot be zero at the same time as minCandidateNodesPercentage"]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def num_candidates(self, num_nodes: int) -> int:
        """How many candidate nodes to find among ``num_nodes`` (kube-scheduler's calculateNumCandidates)."""
        wanted = max(num_nodes * self.minCandidateNodesPercentage // 100, self.minCandidateNodesAbsolute)
        return min(wanted, num_nodes)


PLUGIN = Plugin(name=NAME, args=DefaultPreemptionArgs, post_filter=True)
