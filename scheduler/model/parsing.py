"""How a pod field that cannot be read is treated: the parse policy, and the error that names the field;
and ``Unsupported``, a field that reads well but that this scheduler cannot honour.

Two policies, chosen once per pod by whoever parses it:
- ``STRICT`` for pods about to be scheduled: a malformed quantity, toleration or node affinity raises
  ``PodSpecError`` naming the field, so the runtime can report it in a FailedScheduling event and go on
  with other pods.
- ``LENIENT`` for pods already bound to a node: the kubelet runs them whatever we think of their spec, so
  their usage must still be counted. What does not parse is skipped; everything that parses is counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class PodSpecError(ValueError):
    """A pod field the scheduler cannot interpret; ``field`` is its path, ``reason`` says what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ParsePolicy:
    """What parsing does with a field it cannot read: raise, or skip it and go on."""

    name: str
    skip_unreadable: bool

    def unreadable(self, error: PodSpecError) -> None:
        """Raise ``error`` (strict), or return so that the caller skips the field (lenient)."""
        if not self.skip_unreadable:
            raise error


STRICT = ParsePolicy("strict", skip_unreadable=False)
LENIENT = ParsePolicy("lenient", skip_unreadable=True)


def as_list(value: Any, path: str) -> list[Any]:
    """A list field (absent: empty); raises PodSpecError naming ``path`` for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise PodSpecError(path, f"expected a list, got {value!r}")
    return value


def as_str_map(value: Any, path: str) -> dict[str, str]:
    """A map of strings (absent or empty: empty); raises PodSpecError naming ``path`` for anything else."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise PodSpecError(path, f"expected a map of strings, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A pod field that constrains placement in kube-scheduler and that this scheduler does not honour:
    ``plugin`` is the kube-scheduler plugin that would; ``reason`` says what is not done."""

    field: str
    plugin: str
    reason: str

    @property
    def message(self) -> str:
        return (f"{self.field}: {self.reason} (kube-scheduler's {self.plugin} plugin does); schedule this pod with "
                "the default scheduler (leave spec.schedulerName unset) or run this one as a scheduler extender")
