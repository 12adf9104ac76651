"""The points around the filters, run host-side for `./lab explain`: PreEnqueue before them, and Reserve then
Permit on the chosen node after them, with the profile's own plugin instances (``scheduler.framework.Extensions``
made from each plugin's ``setup`` class) and a handle that writes nothing.

This is a what-if: the scheduler's in-memory state (its queue, the pods it has reserved and holds at Permit,
a plugin instance's own memory) is not readable from outside its process, so what is shown is what the
scheduler's code decides about the pod on the cluster as it is now. The handle (``WhatIfHandle``) gives the
plugins the objects of the kinds they ``watch`` as listed from the API server, an empty set of waiting pods,
and refuses every API call that would change something (recorded, and shown); Unreserve runs after Permit,
as the scheduler runs it when a reserved pod is not bound.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import (
    ApiCallError,
    ApiCalls,
    ClusterView,
    Code,
    CycleState,
    Extensions,
    Handle,
    ObjectStore,
    Profile,
    Status,
)
from scheduler.framework.extensions import PluginSetupError
from scheduler.framework.waiting import WaitingPods
from scheduler.model import PodInfo

# What the outcome of the points is (Explanation.outcome)
GATED, WOULD_WAIT, REJECTED, WOULD_BIND = "gated", "would_wait", "rejected", "would_bind"

REFUSED = "explain is a what-if: it changes nothing in the cluster"

Reader = Callable[[str], Any]  # GET a path from the API server (a read passes through)


class WhatIfApi(ApiCalls):
    """API calls of a what-if: reads (GET) go to ``reader`` when there is one; anything else is refused with
    403 and recorded in ``refused`` as "METHOD path"."""

    def __init__(self, reader: Reader | None = None) -> None:
        self.reader = reader
        self.refused: list[str] = []

    def request(self, method: str, path: str, body: Any = None) -> Any:
        if method.upper() == "GET" and self.reader is not None:
            return self.reader(path)
        self.refused.append(f"{method.upper()} {path}")
        raise ApiCallError(403, "Forbidden", REFUSED)


class WhatIfHandle(Handle):
    """A handle that writes nothing: the watched objects as listed, no pods waiting (the scheduler's own are
    not visible from here), this host's clock, every write refused and recorded."""

    def __init__(self, scheduler_name: str, kinds: Mapping[str, ObjectStore], reader: Reader | None = None) -> None:
        super().__init__(scheduler_name, kinds, WaitingPods(time.monotonic), WhatIfApi(reader))

    @property
    def api(self) -> WhatIfApi:
        assert isinstance(self._api, WhatIfApi)
        return self._api

    def now(self) -> float:
        return time.monotonic()

    def bind(self, pod: PodInfo, node: str) -> Status:
        self.api.refused.append(f"POST /api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding")
        return Status(Code.ERROR, (f"binding refused: {REFUSED}",))


@dataclass
class PermitWait:
    plugin: str
    timeout: float  # seconds the plugin lets the pod wait at most
    reason: str  # what it waits for, in the plugin's words ("" when it gave none)

    def as_json(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "timeout": self.timeout, "reason": self.reason}


@dataclass
class PointsOutcome:
    """What the points around the filters decide for a pending pod: ``outcome`` one of gated (PreEnqueue keeps
    it out of the queue), would_wait (Permit holds it on ``node``), rejected (at ``point``: Reserve or
    Permit), would_bind (every point lets it through), or "" (the points were not reached: no node fits)."""

    outcome: str = ""
    point: str = ""  # PreEnqueue, Reserve or Permit: where it stopped
    plugin: str = ""
    reason: str = ""
    node: str | None = None
    waits: list[PermitWait] = field(default_factory=list)
    refused_calls: list[str] = field(default_factory=list)  # "METHOD path" a plugin tried, refused here

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "point": self.point, "plugin": self.plugin, "reason": self.reason,
                "node": self.node, "waits": [w.as_json() for w in self.waits],
                "refused_calls": self.refused_calls}


def has_points(profile: Profile) -> bool:
    """Whether the profile runs any plugin at PreEnqueue, Reserve or Permit (else explain has nothing to add)."""
    return any(profile.points.get(key) for key in ("preEnqueue", "reserve", "permit"))


def extensions_for(profile: Profile, cluster: ClusterView, reader: Reader | None = None) -> Extensions:
    """The profile's plugin instances, made as the scheduler makes them, with a WhatIfHandle."""
    return Extensions(profile.points, WhatIfHandle(profile.scheduler_name, cluster.kinds, reader))


def pre_enqueue(extensions: Extensions, pod: PodInfo) -> PointsOutcome | None:
    """The PreEnqueue plugins' verdict: a gated outcome, or None when the pod may enter the queue."""
    status = extensions.pre_enqueue(pod)
    if status is None:
        return None
    return PointsOutcome(GATED, "PreEnqueue", status.plugin, status.reason or "(no reason given)",
                         refused_calls=_refused(extensions))


def reserve_and_permit(extensions: Extensions, pod: PodInfo, node: str, cluster: ClusterView) -> PointsOutcome:
    """Reserve, then Permit, for the pod assumed on ``node`` as the scheduling cycle runs them (its CycleState
    holds the snapshot the node was chosen on), then Unreserve: nothing stays reserved."""
    cycle = CycleState(cluster, node)
    assumed = dataclasses.replace(pod, node_name=node)
    said = _recording_permits(extensions)
    try:
        outcome = _reserve_and_permit(extensions, cycle, assumed, node, said)
    finally:
        extensions.unreserve(cycle, assumed, node)
    outcome.refused_calls = _refused(extensions)  # Unreserve's included
    return outcome


def _reserve_and_permit(extensions: Extensions, cycle: CycleState, pod: PodInfo, node: str,
                        said: dict[str, Status]) -> PointsOutcome:
    status = extensions.reserve(cycle, pod, node)
    if status is not None:
        return PointsOutcome(REJECTED, "Reserve", status.plugin, status.reason, node)
    permit = extensions.permit(cycle, pod, node)
    if permit.rejection is not None:
        return PointsOutcome(REJECTED, "Permit", permit.rejection.plugin, permit.rejection.reason, node)
    if permit.waits:
        waits = [PermitWait(p, t, said[p].reason if p in said else "") for p, t in permit.waits.items()]
        return PointsOutcome(WOULD_WAIT, "Permit", waits[0].plugin, waits[0].reason, node, waits)
    return PointsOutcome(WOULD_BIND, node=node)


def _recording_permits(extensions: Extensions) -> dict[str, Status]:
    """Wrap the Permit plugins' methods so that each one's last Status is kept (Extensions.permit keeps only
    the waiting plugins' timeouts; explain shows their reasons too)."""
    said: dict[str, Status] = {}

    def recording(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            status = method(*args)
            if isinstance(status, Status):
                said[name] = status
            return status
        return call

    extensions.by_point["permit"] = [(name, recording(name, method))
                                     for name, method in extensions.by_point["permit"]]
    return said


def _refused(extensions: Extensions) -> list[str]:
    handle = extensions.handle
    return list(handle.api.refused) if isinstance(handle, WhatIfHandle) else []


__all__ = ["GATED", "REJECTED", "WOULD_BIND", "WOULD_WAIT", "PermitWait", "PluginSetupError", "PointsOutcome", "Reader",
           "WhatIfHandle", "extensions_for", "has_points", "pre_enqueue", "reserve_and_permit"]
