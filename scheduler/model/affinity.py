"""Node affinity: node selector requirements, terms and selectors, how they match a node, and how a pod's
``spec.affinity.nodeAffinity`` parses into them (strictly: the first problem raises PodSpecError)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.parsing import PodSpecError, as_list

_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # what Go's strconv.ParseInt(s, 10, 64) accepts
_NODE_AFFINITY_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_REQUIRED_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED_AFFINITY = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(slots=True, frozen=True)
class Requirement:
    """One node selector requirement (matchExpressions entry, or a matchFields entry on metadata.name)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()
    number: int | None = None  # the single integer value of Gt / Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == "NotIn":
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None or not _INTEGER.match(value):
            return False  # a label that is not an integer never satisfies Gt / Lt
        if op == "Gt":
            return int(value) > self.number  # type: ignore[operator]
        return int(value) < self.number  # type: ignore[operator]


@dataclass(slots=True, frozen=True)
class SelectorTerm:
    """A nodeSelectorTerm: all of its requirements must hold."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term selects no node (core/v1 NodeSelectorTerm)
        for req in self.match_expressions:
            if not req.matches(labels):
                return False
        if self.match_fields:
            fields = {"metadata.name": node_name}
            for req in self.match_fields:
                if not req.matches(fields):
                    return False
        return True


@dataclass(slots=True, frozen=True)
class NodeSelector:
    """requiredDuringSchedulingIgnoredDuringExecution: a node matches if any term matches."""

    terms: tuple[SelectorTerm, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for term in self.terms:
            if term.matches(node_name, labels):
                return True
        return False


@dataclass(slots=True, frozen=True)
class PreferredTerm:
    """preferredDuringSchedulingIgnoredDuringExecution entry: a weight (1..100) earned when term matches."""

    weight: int
    term: SelectorTerm


def parse_node_affinity(spec: Mapping[str, Any]) -> tuple[NodeSelector | None, tuple[PreferredTerm, ...]]:
    """The pod's required node selector (None: none) and preferred terms."""
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not node_affinity:
        return None, ()
    if not isinstance(node_affinity, dict):
        raise PodSpecError("spec.affinity.nodeAffinity", f"expected a map, got {node_affinity!r}")
    required = None
    req = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        required = parse_node_selector(req, _REQUIRED_AFFINITY)
    preferred = []
    for i, item in enumerate(as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"),
                                     _PREFERRED_AFFINITY)):
        path = f"{_PREFERRED_AFFINITY}[{i}]"
        if not isinstance(item, dict):
            raise PodSpecError(path, f"expected weight and preference, got {item!r}")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise PodSpecError(f"{path}.weight", f"must be an integer from 1 to 100, got {weight!r}")
        preferred.append(PreferredTerm(weight, _parse_term(item.get("preference") or {}, f"{path}.preference")))
    return required, tuple(preferred)


def parse_node_selector(obj: Any, path: str) -> NodeSelector:
    """A core/v1 NodeSelector ({nodeSelectorTerms: [...]}) found at ``path``; raises PodSpecError naming
    the first bad field."""
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a map with nodeSelectorTerms, got {obj!r}")
    terms = as_list(obj.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    return NodeSelector(tuple(_parse_term(t, f"{path}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms)))


def _parse_term(obj: Any, path: str) -> SelectorTerm:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a node selector term, got {obj!r}")
    exprs = as_list(obj.get("matchExpressions"), f"{path}.matchExpressions")
    fields = as_list(obj.get("matchFields"), f"{path}.matchFields")
    return SelectorTerm(
        tuple(_parse_requirement(e, f"{path}.matchExpressions[{i}]", False) for i, e in enumerate(exprs)),
        tuple(_parse_requirement(e, f"{path}.matchFields[{i}]", True) for i, e in enumerate(fields)),
    )


def _parse_requirement(obj: Any, path: str, fields: bool) -> Requirement:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a requirement with key, operator, values; got {obj!r}")
    key = obj.get("key")
    operator = obj.get("operator")
    values = obj.get("values") or []
    if not isinstance(key, str) or not key:
        raise PodSpecError(f"{path}.key", "must be a non-empty string")
    if operator not in _NODE_AFFINITY_OPERATORS:
        raise PodSpecError(
            f"{path}.operator", f"{operator!r} is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt"
        )
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PodSpecError(f"{path}.values", f"must be a list of strings, got {values!r}")
    if fields:
        if key != "metadata.name":
            raise PodSpecError(f"{path}.key", f"{key!r} is not supported; matchFields supports metadata.name")
        if operator not in ("In", "NotIn") or len(values) != 1:
            raise PodSpecError(path, "matchFields on metadata.name needs operator In or NotIn and one value")
    number = None
    if operator in ("In", "NotIn") and not values:
        raise PodSpecError(f"{path}.values", f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise PodSpecError(f"{path}.values", f"operator {operator} takes no values, got {values!r}")
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or not _INTEGER.match(values[0]):
            raise PodSpecError(f"{path}.values", f"operator {operator} needs exactly one integer, got {values!r}")
        number = int(values[0])
    return Requirement(key, operator, frozenset(values), number)
