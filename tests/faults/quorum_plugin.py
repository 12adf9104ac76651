"""A user's plugin for the Permit hand-over fault case: pods labelled quorum=<group> and quorum-size=<n> are
bound all together, n at a time. Permit holds each member until n of the group are counted on nodes (assumed or
bound), then allows the waiting ones (the shape of a gang scheduler's Permit, without its custom resource)."""

from __future__ import annotations

from scheduler.framework import Code, CycleState, Handle, NoArgs, Plugin, Status
from scheduler.model import PodInfo

WAIT_SECONDS = 60.0


class Quorum:
    def __init__(self, args: NoArgs, handle: Handle) -> None:
        self.handle = handle

    def permit(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        group = pod.labels.get("quorum")
        if group is None:
            return None
        size = int(pod.labels.get("quorum-size", "1"))
        assert cycle.cluster is not None
        counted = sum(1 for n in cycle.cluster.nodes for p in n.pods.values() if p.labels.get("quorum") == group)
        if counted + 1 < size:  # the snapshot was taken before this pod was assumed
            return Status(Code.WAIT, (f"{counted + 1}/{size} of quorum {group}",), timeout=WAIT_SECONDS)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.labels.get("quorum") == group:
                waiting.allow("Quorum")
        return None


PLUGINS = [Plugin("Quorum", setup=Quorum)]
