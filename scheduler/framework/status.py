"""A plugin's verdicts (``Status``, ``Code``) and its args (``Args``): what every extension point returns or
reads, kept apart from the ``Plugin`` descriptor so that the points' signatures (``signatures``) and the
framework's waiting pods can name them without importing the descriptor."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from pydantic import BaseModel, ConfigDict

from scheduler.model import PodInfo

__all__ = ["SKIP", "SUCCESS", "Args", "Code", "NoArgs", "Status", "unsupported_status"]


class Code(IntEnum):
    """Verdict codes, as kube-scheduler's framework names them (and numbers them)."""

    SUCCESS = 0
    # Something went wrong (a plugin raised, an API call failed): the pod is retried with backoff.
    ERROR = 1
    # The node does not fit now but could (e.g. after other pods leave): preemption might help.
    UNSCHEDULABLE = 2
    # Nothing about other pods would make this node fit (taints, selectors, names).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # Permit: hold the reserved pod until allowed, rejected, or ``Status.timeout`` seconds have passed.
    WAIT = 4
    # Bind: this plugin does not bind the pod; the next Bind plugin does.
    SKIP = 5


@dataclass(frozen=True, slots=True, eq=False)
class Status:
    """A filter verdict. ``reasons`` are counted per node in the FailedScheduling message, so they never
    name the node: "Insufficient cpu", "node(s) were unschedulable". Compared by identity (eq=False):
    the filter loop counts ``None`` verdicts with list.count, which would otherwise call a Python
    ``__eq__`` per failed node."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    timeout: float = 0.0  # seconds, for a Permit's WAIT: how long the pod may wait for this plugin

    @property
    def reason(self) -> str:
        return ", ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS


SUCCESS = Status(Code.SUCCESS)
SKIP = Status(Code.SKIP)


class PluginFailure(Exception):
    """Raised by a filter or score function to end the scheduling attempt with an error, as a kube-scheduler
    plugin returning an Error status does: the pod fails with ``running "<plugin>" filter plugin: <message>``
    (kube-scheduler's words for the point: ``running PreFilter plugin "<plugin>": <message>`` and so on) and
    is retried after backoff. Any other exception reads ``raised <type>: <message>``."""


def unsupported_status(pod: PodInfo, plugin: str) -> Status | None:
    """The pre_filter rejection of a pod stating fields ``plugin`` would honour in kube-scheduler and this
    scheduler cannot (``PodInfo.unsupported``), or None. Unresolvable: no node or event can help."""
    if not pod.unsupported:
        return None
    messages = tuple(u.message for u in pod.unsupported if u.plugin == plugin)
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, messages, plugin) if messages else None


class Args(BaseModel):
    """Base of every plugin's pluginConfig args: unknown fields are errors. ``apiVersion``/``kind`` are
    accepted because kube-scheduler configs often carry them inside args (kind: NodeResourcesFitArgs)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    apiVersion: str | None = None
    kind: str | None = None


class NoArgs(Args):
    """For plugins that take no arguments."""
