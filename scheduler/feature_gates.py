"""Feature gates of the scheduler's Kubernetes minor (kube-scheduler's ``--feature-gates``).

Placeholder of the shared interface until the full table lands (``gates`` branch): it knows only the gates
the scheduler reads (GenericWorkload, GangScheduling) and a few kube-scheduler gates the recorded
configurations set; the full module replaces this one whole.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KUBERNETES_GATES", "SCHEDULER_MINOR", "FeatureGateError", "FeatureGates", "Gate", "parse_feature_gates"]

SCHEDULER_MINOR = 36


class FeatureGateError(ValueError):
    """A gate the minor does not have, a value that is not true/false, or a locked gate set to its non-default."""


@dataclass(frozen=True)
class Gate:
    name: str
    default: bool
    stage: str  # "ALPHA" | "BETA" | "GA" | "DEPRECATED"
    locked: bool = False


def _table(*gates: Gate) -> dict[str, Gate]:
    return {g.name: g for g in gates}


_COMMON = (Gate("OpportunisticBatching", True, "BETA"), Gate("DynamicResourceAllocation", True, "GA", True),
           Gate("SchedulerQueueingHints", True, "GA", True))
KUBERNETES_GATES: dict[int, dict[str, Gate]] = {
    34: _table(*_COMMON[1:]),
    35: _table(*_COMMON, Gate("GenericWorkload", False, "ALPHA"), Gate("GangScheduling", False, "ALPHA")),
    36: _table(*_COMMON, Gate("GenericWorkload", False, "ALPHA"), Gate("GangScheduling", False, "ALPHA")),
}


class FeatureGates:
    """Immutable: the explicit settings over the minor's defaults."""

    def __init__(self, minor: int, explicit: Mapping[str, bool]) -> None:
        self._minor = minor
        self._explicit = dict(sorted(explicit.items()))

    def enabled(self, name: str) -> bool:
        if name in self._explicit:
            return self._explicit[name]
        gate = KUBERNETES_GATES[self._minor].get(name)
        return gate.default if gate is not None else False

    def explicit(self) -> dict[str, bool]:
        return dict(self._explicit)

    def as_flag(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in self._explicit.items())

    def __repr__(self) -> str:
        return f"FeatureGates({self.as_flag() or 'defaults'})"


def parse_feature_gates(value: str | Mapping[str, bool] | None, minor: int = SCHEDULER_MINOR,
                        source: str = "--feature-gates") -> FeatureGates:
    known = KUBERNETES_GATES.get(minor)
    if known is None:
        raise FeatureGateError(f"{source}: Kubernetes 1.{minor} is not known (known: "
                               f"{', '.join(f'1.{m}' for m in sorted(KUBERNETES_GATES))})")
    pairs: dict[str, object] = {}
    if isinstance(value, str):
        for item in (part.strip() for part in value.split(",")):
            if not item:
                continue
            name, sep, text = item.partition("=")
            if not sep:
                raise FeatureGateError(f"{source}: {item!r} is not NAME=true|false")
            pairs[name.strip()] = text.strip()
    elif value is not None:
        pairs = dict(value)
    explicit: dict[str, bool] = {}
    for name, raw in pairs.items():
        gate = known.get(name)
        if gate is None:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise FeatureGateError(f"{source}: unrecognized feature gate: {name} (Kubernetes 1.{minor}){hint}")
        if isinstance(raw, bool):
            on = raw
        elif isinstance(raw, str) and raw.lower() in ("true", "false"):
            on = raw.lower() == "true"
        else:
            raise FeatureGateError(f"{source}: {name}={raw!r}: the value must be true or false")
        if gate.locked and on != gate.default:
            raise FeatureGateError(f"{source}: cannot set feature gate {name} to {str(on).lower()}: it is locked "
                                   f"to {str(gate.default).lower()} in Kubernetes 1.{minor}; remove it")
        explicit[name] = on
    return FeatureGates(minor, explicit)
