"""DefaultBinder: kube-scheduler's default Bind plugin, a Binding posted with the pod's UID (``Handle.bind``)."""

from __future__ import annotations

from scheduler.framework import DEFAULT_BINDER, CycleState, Handle, NoArgs, Plugin, Status
from scheduler.model import PodInfo


class DefaultBinder:
    def __init__(self, args: NoArgs, handle: Handle) -> None:
        self.handle = handle

    def bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status:
        return self.handle.bind(pod, node)


PLUGIN = Plugin(name=DEFAULT_BINDER, setup=DefaultBinder)
