"""PrioritySort: kube-scheduler's default QueueSort plugin (higher priority first, then first come)."""

from __future__ import annotations

from typing import Any

from scheduler.framework import Args, Handle, Plugin, priority_sort_key
from scheduler.model import PodInfo

NAME = "PrioritySort"


class PrioritySort:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def sort_key(self, pod: PodInfo, enqueued_at: float) -> Any:
        return priority_sort_key(pod, enqueued_at)


PLUGIN = Plugin(name=NAME, setup=PrioritySort)
