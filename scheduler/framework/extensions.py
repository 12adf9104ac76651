"""One profile's plugin instances for the points outside filter and score, and the rules each point runs by
(kube-scheduler's frameworkImpl.Run*Plugins in pkg/scheduler/framework/runtime/framework.go, 1.36):

- PreEnqueue: every plugin in order; the first that does not succeed keeps the pod out of the active queue.
- QueueSort: the profile's one plugin orders the active queue by its ``sort_key``.
- PostFilter: in order, after DefaultPreemption found no room; their reasons end the FailedScheduling message.
  One that succeeds, or answers UNSCHEDULABLE_AND_UNRESOLVABLE or ERROR, is the last to run.
- Reserve: in order; the first failure stops it, and the caller then runs Unreserve.
- Unreserve: every Reserve plugin in reverse order, the failed one and those not reached included, so
  ``unreserve`` must be idempotent; a raising one is logged and the others still run.
- Permit: in order; a rejection ends it; WAIT statuses are collected (plugin -> timeout) and the pod is held
  until each of those plugins allows it (``scheduler.framework.waiting``).
- PreBind: in order; the first failure fails the binding.
- Bind: in order; the first plugin whose status is not SKIP decides (DefaultBinder binds through the handle).
- PostBind: every plugin, informational.
A plugin that raises fails that point with an ERROR status naming the plugin and the exception: the pod's
cycle fails and is retried, the scheduler keeps running. Every status carries the name of the plugin it came
from.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.handle import CycleState, Handle
from scheduler.framework.plugin import SUCCESS, Args, Code, Plugin, Status
from scheduler.framework.points import POINTS
from scheduler.framework.waiting import MAX_PERMIT_WAIT
from scheduler.model import PodInfo

__all__ = ["DEFAULT_BINDER", "Extensions", "PermitResult", "PluginSetupError", "priority_sort_key"]

log = logging.getLogger(__name__)

DEFAULT_BINDER = "DefaultBinder"  # its binding is the scheduler's own POST of a Binding (Handle.bind)

# (plugin, args) at each method point, by the point's config key.
PointPlugins = Mapping[str, Sequence[tuple[Plugin, Args]]]


class PluginSetupError(ValueError):
    """A plugin's setup class could not be made; the message names the plugin."""


def priority_sort_key(pod: PodInfo, enqueued_at: float) -> tuple[int, float]:
    """PrioritySort's order: higher priority first, then the earlier arrival (kube-scheduler's default)."""
    return (-pod.priority, enqueued_at)


@dataclass(frozen=True, slots=True)
class PermitResult:
    """What Permit came to: ``rejection`` (the pod may not be bound now), else the plugins that asked the
    pod to wait, each with its timeout in seconds (empty: bind at once)."""

    rejection: Status | None = None
    waits: dict[str, float] = field(default_factory=dict)


class Extensions:
    """The instances a profile's method points run, made once with the profile's ``Handle``."""

    def __init__(self, points: PointPlugins, handle: Handle | None) -> None:
        self.handle = handle
        self.instances: dict[str, Any] = {}
        self.by_point: dict[str, list[tuple[str, Any]]] = {}
        for point in POINTS:
            if point.method is None:
                continue
            entries = []
            for plugin, args in points.get(point.config, ()):
                if plugin.setup is None:  # DefaultPreemption: a descriptor flag, run by the framework's preemption
                    continue
                entries.append((plugin.name, getattr(self._instance(plugin, args), point.method)))
            self.by_point[point.config] = entries
        self._unreserve = [(name, self.instances[name].unreserve) for name, _ in self.by_point["reserve"]]
        self._concerns: list[Any] | None = None
        self._sort = self.by_point["queueSort"][0][1] if self.by_point["queueSort"] else priority_sort_key

    def _instance(self, plugin: Plugin, args: Args) -> Any:
        if plugin.name not in self.instances:
            assert plugin.setup is not None
            try:
                self.instances[plugin.name] = plugin.setup(args, self.handle)
            except Exception as err:
                raise PluginSetupError(f"plugin {plugin.name}: {plugin.setup.__name__}(args, handle) raised "
                                       f"{type(err).__name__}: {err}") from err
        return self.instances[plugin.name]

    @property
    def has_binding_points(self) -> bool:
        """Whether binding takes more than DefaultBinder's POST: Reserve, Permit, PreBind, PostBind, another Bind."""
        binds = [name for name, _ in self.by_point["bind"]]
        return bool(self.by_point["reserve"] or self.by_point["permit"] or self.by_point["preBind"]
                    or self.by_point["postBind"] or binds != [DEFAULT_BINDER])

    def binding_points_for(self, pod: PodInfo) -> bool:
        """Whether binding this pod takes more than DefaultBinder's POST: ``has_binding_points``, unless every
        plugin with such a point says it has nothing to do for the pod (an optional ``concerns(pod)`` method of
        its setup class returning False, as kube-scheduler's DynamicResources skips pods without claims). Those
        pods then take the plain path; what is decided and bound is the same."""
        if not self.has_binding_points:
            return False
        if self._concerns is None:
            self._concerns = self._concern_checks()
        return any(check is None or check(pod) for check in self._concerns)

    def _concern_checks(self) -> list[Any]:
        """Per plugin at a binding point: its ``concerns`` method, or None when it has none (concerns every pod)."""
        names = {name for key in ("reserve", "permit", "preBind", "postBind") for name, _ in self.by_point[key]}
        names |= {name for name, _ in self.by_point["bind"] if name != DEFAULT_BINDER}
        return [getattr(self.instances[name], "concerns", None) for name in sorted(names)]

    @property
    def gates(self) -> bool:
        return bool(self.by_point["preEnqueue"])

    def plugins_at(self, config: str) -> list[str]:
        return [name for name, _ in self.by_point[config]]

    # -- the queue ----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """None when the pod may enter the active queue, else the first plugin's status keeping it out."""
        for name, method in self.by_point["preEnqueue"]:
            status = _call(name, "PreEnqueue", method, pod)
            if status is not None and not status.ok:
                return status
        return None

    def sort_key(self, pod: PodInfo, enqueued_at: float) -> Any:
        return self._sort(pod, enqueued_at)

    # -- the scheduling cycle, after the filters ------------------------------------------------------
    def post_filter(self, cycle: CycleState, pod: PodInfo, failures: Mapping[str, Status]) -> list[Status]:
        """The statuses of the plugins' PostFilter for a pod no node fits, in order, until one succeeds or
        one answers UNSCHEDULABLE_AND_UNRESOLVABLE or ERROR (kube-scheduler's RunPostFilterPlugins stops there)."""
        said = []
        for name, method in self.by_point["postFilter"]:
            status = _call(name, "PostFilter", method, cycle, pod, failures)
            if status is None or status.ok:
                break
            said.append(status)
            if status.code in (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR):
                break
        return said

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        for name, method in self.by_point["reserve"]:
            status = _call(name, "Reserve", method, cycle, pod, node)
            if status is not None and not status.ok:
                return status
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        for name, method in reversed(self._unreserve):
            try:
                method(cycle, pod, node)
            except Exception:
                log.exception("plugin %s: unreserve of %s on %s raised (the other plugins still run)",
                              name, pod.key, node)

    def permit(self, cycle: CycleState, pod: PodInfo, node: str) -> PermitResult:
        waits: dict[str, float] = {}
        for name, method in self.by_point["permit"]:
            status = _call(name, "Permit", method, cycle, pod, node)
            if status is None or status.ok:
                continue
            if status.code is Code.WAIT:
                if not 0 < status.timeout <= MAX_PERMIT_WAIT:
                    return PermitResult(_error(name, "Permit", f"returned WAIT with a timeout of {status.timeout}s: "
                                               f"give a timeout above 0s and at most {MAX_PERMIT_WAIT:.0f}s"))
                waits[name] = status.timeout
                continue
            return PermitResult(status)
        return PermitResult(None, waits)

    # -- the binding cycle ----------------------------------------------------------------------------
    def pre_bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        for name, method in self.by_point["preBind"]:
            status = _call(name, "PreBind", method, cycle, pod, node)
            if status is not None and not status.ok:
                return status
        return None

    def bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status:
        """The first Bind plugin that does not SKIP binds; all skipping is an error, as upstream."""
        for name, method in self.by_point["bind"]:
            status = _call(name, "Bind", method, cycle, pod, node)
            if status is None:
                status = dataclasses.replace(SUCCESS, plugin=name)
            if status.code is not Code.SKIP:
                return status
        return _error("", "Bind", "no Bind plugin bound the pod (each returned SKIP)")

    def post_bind(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        for name, method in self.by_point["postBind"]:
            _call(name, "PostBind", method, cycle, pod, node)


def _call(name: str, point: str, method: Any, *args: Any) -> Status | None:
    """Run one plugin's point: its status named after it, or an ERROR status when it raised or returned
    something that is not a Status."""
    try:
        status = method(*args)
    except Exception as err:
        log.exception("plugin %s: %s raised", name, point)
        return _error(name, point, f"raised {type(err).__name__}: {err}")
    if status is None:
        return None
    if not isinstance(status, Status):
        return _error(name, point, f"returned {status!r}: return None or a scheduler.framework.Status")
    return status if status.plugin == name else dataclasses.replace(status, plugin=name)


def _error(name: str, point: str, what: str) -> Status:
    """kube-scheduler's words for a point that failed with an error: running Permit plugin "X": <what>."""
    where = f'running {point} plugin "{name}"' if name else f"running {point} plugins"
    return Status(Code.ERROR, (f"{where}: {what}",), name)
