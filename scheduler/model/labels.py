"""Label selectors (metav1.LabelSelector) as pods state them: in topology spread constraints and in pod
affinity terms (labelSelector, namespaceSelector). Parsed strictly: the first problem raises PodSpecError
naming the field.

An absent selector selects nothing; an empty one ({}) selects everything
(metav1.LabelSelectorAsSelector).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.affinity import Requirement
from scheduler.model.parsing import PodSpecError, as_list, as_str_map

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """matchLabels and matchExpressions, all ANDed. ``nothing``: the absent selector, which matches no
    labels; no requirements and not ``nothing``: the empty selector, which matches every label set."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for req in self.requirements:
            if not req.matches(labels):
                return False
        return True


def parse_label_selector(obj: Any, path: str) -> LabelSelector | None:
    """The selector at ``path``; None when it is absent (callers decide what absent means there)."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a label selector, got {obj!r}")
    requirements = [Requirement(k, "In", frozenset({v}))
                    for k, v in sorted(as_str_map(obj.get("matchLabels"), f"{path}.matchLabels").items())]
    for i, expr in enumerate(as_list(obj.get("matchExpressions"), f"{path}.matchExpressions")):
        requirements.append(_parse_expression(expr, f"{path}.matchExpressions[{i}]"))
    return LabelSelector(tuple(requirements))


def _parse_expression(obj: Any, path: str) -> Requirement:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a requirement with key, operator, values; got {obj!r}")
    key, operator, values = obj.get("key"), obj.get("operator"), obj.get("values") or []
    if not isinstance(key, str) or not key:
        raise PodSpecError(f"{path}.key", "must be a non-empty string")
    if operator not in _OPERATORS:
        raise PodSpecError(f"{path}.operator", f"{operator!r} is not one of In, NotIn, Exists, DoesNotExist")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PodSpecError(f"{path}.values", f"must be a list of strings, got {values!r}")
    if operator in ("In", "NotIn") and not values:
        raise PodSpecError(f"{path}.values", f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise PodSpecError(f"{path}.values", f"operator {operator} takes no values, got {values!r}")
    return Requirement(key, operator, frozenset(values))
