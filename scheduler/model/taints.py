"""Taints and tolerations: the toleration rule, a pod's tolerations parsed, and the taints a node's
conditions imply."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.parsing import ParsePolicy, PodSpecError, as_list

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
_TAINT_EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})

# Node conditions the node lifecycle controller turns into NoSchedule taints (TaintNodesByCondition):
# (condition type, status that means trouble) -> taint key.
_CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): TAINT_NOT_READY,
    ("Ready", "Unknown"): TAINT_UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Same rule as core/v1 Toleration.ToleratesTaint: an empty effect matches every effect, an empty
        key with Exists matches every taint, Equal (the default) compares values."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator == "Equal":
            return self.value == taint.value
        return False


def is_tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """True if any toleration tolerates the taint."""
    for toleration in tolerations:
        if toleration.tolerates(taint):
            return True
    return False


def parse_tolerations(spec: Mapping[str, Any], policy: ParsePolicy) -> tuple[Toleration, ...]:
    """``spec.tolerations``; the policy decides what happens to an entry that cannot be read."""
    try:
        items = as_list(spec.get("tolerations"), "spec.tolerations")
    except PodSpecError as err:
        policy.unreadable(err)
        return ()
    result: list[Toleration] = []
    for i, item in enumerate(items):
        try:
            result.append(_parse_toleration(item, f"spec.tolerations[{i}]"))
        except PodSpecError as err:
            policy.unreadable(err)
    return tuple(result)


def _parse_toleration(item: Any, path: str) -> Toleration:
    if not isinstance(item, dict):
        raise PodSpecError(path, f"expected a toleration map, got {item!r}")
    operator = item.get("operator") or "Equal"
    effect = item.get("effect") or ""
    key = item.get("key") or ""
    value = item.get("value") or ""
    if operator not in ("Equal", "Exists"):
        raise PodSpecError(f"{path}.operator", f"{operator!r} is not Equal or Exists")
    if effect and effect not in _TAINT_EFFECTS:
        raise PodSpecError(f"{path}.effect", f"{effect!r} is not NoSchedule, PreferNoSchedule or NoExecute")
    if operator == "Exists" and value:
        raise PodSpecError(f"{path}.value", "must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise PodSpecError(f"{path}.operator", "must be Exists when key is empty")
    seconds = item.get("tolerationSeconds")
    return Toleration(str(key), operator, str(value), effect, seconds if isinstance(seconds, int) else None)


def parse_node_taints(spec: Mapping[str, Any]) -> list[Taint]:
    """``spec.taints`` of a node (entries that are not maps are skipped: the node exists regardless)."""
    return [
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in spec.get("taints") or []
        if isinstance(t, dict)
    ]


def condition_taints(conditions: list[Any], existing: list[Taint]) -> list[Taint]:
    """Taints the node lifecycle controller would add for these conditions but that the node object does
    not carry yet. The controller taints a node a few seconds after its condition changes; deriving them
    here means a not-ready node is avoided at once, and with the same reason kube-scheduler gives for the
    tainted node ("node(s) had untolerated taint(s)")."""
    have = {t.key for t in existing}
    added = []
    for cond in conditions:
        if not isinstance(cond, dict):
            continue
        key = _CONDITION_TAINTS.get((str(cond.get("type")), str(cond.get("status"))))
        if key and key not in have:
            added.append(Taint(key, "", NO_SCHEDULE))
            have.add(key)
    return added
