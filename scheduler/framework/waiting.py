"""Pods held at Permit (kube-scheduler's waitingPodsMap and waitingPod).

A pod some Permit plugin answered WAIT is reserved on its node but not bound: it waits until every such plugin
allows it, one of them (or any plugin, through the handle) rejects it, or a plugin's timeout passes. Nothing
blocks while it waits: the outcome is handed to ``on_done`` once, by whoever settled it (a plugin's call, the
timer, the scheduler giving up leadership), and the runtime then binds the pod or undoes its reservation.
``expire`` is driven by a clock the owner chooses: the runtime's timer thread, or a test's fake clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.framework.status import SUCCESS, Code, Status

if TYPE_CHECKING:
    from scheduler.model import PodInfo

__all__ = ["MAX_PERMIT_WAIT", "WaitingPod", "WaitingPods"]

# kube-scheduler's maxTimeout for a Permit plugin's wait (pkg/scheduler/framework/runtime/framework.go).
MAX_PERMIT_WAIT = 15 * 60.0

Settled = Callable[["WaitingPod", Status], None]


class WaitingPod:
    """One pod waiting at Permit: the node it is reserved on and, per plugin still to allow it, the time
    (on the owner's clock) when that plugin's wait ends."""

    __slots__ = ("_lock", "_on_done", "_owner", "deadlines", "node", "pod", "since", "status")

    def __init__(self, owner: WaitingPods, pod: PodInfo, node: str, deadlines: dict[str, float], since: float,
                 on_done: Settled) -> None:
        self._owner = owner
        self.pod, self.node, self.since = pod, node, since
        self.deadlines = dict(deadlines)
        self._on_done = on_done
        self._lock = threading.Lock()
        self.status: Status | None = None  # set once settled

    def pending_plugins(self) -> list[str]:
        """The Permit plugins that have not allowed the pod yet."""
        with self._lock:
            return sorted(self.deadlines)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod through; the pod goes on to bind once no plugin is left waiting."""
        with self._lock:
            if self.status is not None:
                return
            self.deadlines.pop(plugin, None)
            if self.deadlines:
                return
            self.status = SUCCESS
        self._settle()

    def reject(self, plugin: str, message: str) -> None:
        """End the wait: the pod is not bound, its reservation is undone and it is tried again later."""
        with self._lock:
            if self.status is not None:
                return
            self.status = Status(Code.UNSCHEDULABLE, (message,), plugin)
        self._settle()

    def cancel(self) -> bool:
        """Stop waiting without an outcome (the scheduler stops leading and undoes the reservation itself);
        later allow/reject calls do nothing. True if it was still waiting."""
        with self._lock:
            if self.status is not None:
                return False
            self.status = Status(Code.ERROR, ("cancelled",))
        self._owner._remove(self)
        return True

    def _settle(self) -> None:
        assert self.status is not None
        self._owner._remove(self)
        self._on_done(self, self.status)

    def __repr__(self) -> str:
        return f"WaitingPod({self.pod.key} on {self.node}, waiting for {', '.join(self.pending_plugins())})"


class WaitingPods:
    """Every pod waiting at Permit in one scheduler, by pod UID. Thread-safe."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, WaitingPod] = {}
        self.changed = threading.Condition(self._lock)  # notified when a pod starts waiting (the timer's cue)

    def add(self, pod: PodInfo, node: str, timeouts: dict[str, float], on_done: Settled) -> WaitingPod:
        """Hold ``pod`` on ``node`` until each plugin of ``timeouts`` (plugin -> seconds) allows it."""
        now = self.clock()
        waiting = WaitingPod(self, pod, node, {p: now + t for p, t in timeouts.items()}, now, on_done)
        with self._lock:
            self._pods[pod.uid] = waiting
            self.changed.notify_all()
        return waiting

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def all(self) -> list[WaitingPod]:
        """Every waiting pod (kube-scheduler's IterateOverWaitingPods), oldest first."""
        with self._lock:
            return sorted(self._pods.values(), key=lambda w: w.since)

    def __len__(self) -> int:
        return len(self._pods)

    def next_deadline(self) -> float | None:
        with self._lock:
            return min((min(w.deadlines.values()) for w in self._pods.values() if w.deadlines), default=None)

    def expire(self, now: float | None = None) -> int:
        """Reject every pod one of whose plugins' wait has ended, as kube-scheduler words it; returns how many."""
        now = self.clock() if now is None else now
        late: list[tuple[WaitingPod, str]] = []
        with self._lock:
            for waiting in self._pods.values():
                plugin = min(waiting.deadlines, key=waiting.deadlines.__getitem__, default=None)
                if plugin is not None and waiting.deadlines[plugin] <= now:
                    late.append((waiting, plugin))
        for waiting, plugin in late:
            waited = waiting.deadlines.get(plugin, now) - waiting.since
            waiting.reject(plugin, f"rejected due to timeout after waiting {_go_duration(waited)} at plugin {plugin}")
        return len(late)

    def cancel_all(self) -> list[WaitingPod]:
        """Cancel every waiting pod (the scheduler stops leading: none may be bound from this instance) and
        return them, for their owner to undo their reservations."""
        return [waiting for waiting in self.all() if waiting.cancel()]

    def _remove(self, waiting: WaitingPod) -> None:
        with self._lock:
            if self._pods.get(waiting.pod.uid) is waiting:
                del self._pods[waiting.pod.uid]


def _go_duration(seconds: float) -> str:
    """Seconds as Go prints a time.Duration ("10s", "1m30s", "1.5s")."""
    minutes, rest = divmod(round(seconds, 3), 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{text}" if minutes else text
