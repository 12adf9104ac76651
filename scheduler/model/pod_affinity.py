"""Inter-pod affinity: label selectors, pod affinity terms, and how a pod's ``spec.affinity.podAffinity`` /
``podAntiAffinity`` parse into them (strictly: the first problem raises PodSpecError).

A term matches a pod when the pod's namespace is one the term names (``namespaces``; neither
``namespaces`` nor ``namespaceSelector`` given: the namespace of the pod that states the term) or its
namespace's labels match ``namespaceSelector``, and the pod's labels match ``labelSelector``. A missing
``labelSelector`` selects no pod, an empty one every pod (metav1.LabelSelectorAsSelector); likewise a
missing ``namespaceSelector`` adds no namespace and an empty one adds all.

``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the selector from the stating pod's own labels
(``key In (value)`` / ``key NotIn (value)``; a key the pod lacks is skipped), as the API server does at pod
creation since Kubernetes 1.31 (feature MatchLabelKeysInPodAffinity, beta then, GA in 1.33). A requirement the
API server already merged is not added twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.affinity import Requirement
from scheduler.model.labels import LabelSelector, parse_label_selector
from scheduler.model.parsing import PodSpecError, as_list

_KINDS = (("podAffinity", "affinity"), ("podAntiAffinity", "anti_affinity"))
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(slots=True, frozen=True)
class AffinityTerm:
    """A PodAffinityTerm as the scheduler uses it. ``selector`` / ``namespace_selector`` None: selects
    nothing. ``namespaces`` holds the defaulted namespace (see the module docstring)."""

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None = None

    def matches(self, pod_namespace: str, pod_labels: Mapping[str, str],
                namespace_labels: Mapping[str, str]) -> bool:
        """Does a pod (its namespace, labels and its namespace's labels) match this term?"""
        if self.selector is None or not self.selects_namespace(pod_namespace, namespace_labels):
            return False
        return self.selector.matches(pod_labels)

    def selects_namespace(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        return namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(namespace_labels))


@dataclass(slots=True, frozen=True)
class WeightedAffinityTerm:
    weight: int  # 1..100
    term: AffinityTerm


@dataclass(slots=True, frozen=True)
class PodAffinity:
    """A pod's inter-pod affinity: required and preferred, affinity and anti-affinity terms."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


def parse_pod_affinity(spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> PodAffinity | None:
    """The pod's inter-pod affinity (None: it states none). ``namespace`` and ``labels`` are the pod's own
    (term defaulting, matchLabelKeys)."""
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, dict):
        raise PodSpecError("spec.affinity", f"expected a map, got {affinity!r}")
    parsed: dict[str, Any] = {}
    for api_name, name in _KINDS:
        section = affinity.get(api_name)
        if not section:
            continue
        path = f"spec.affinity.{api_name}"
        if not isinstance(section, dict):
            raise PodSpecError(path, f"expected a map, got {section!r}")
        required = as_list(section.get(_REQUIRED), f"{path}.{_REQUIRED}")
        parsed[f"required_{name}"] = tuple(
            _parse_term(t, f"{path}.{_REQUIRED}[{i}]", namespace, labels) for i, t in enumerate(required))
        preferred = as_list(section.get(_PREFERRED), f"{path}.{_PREFERRED}")
        parsed[f"preferred_{name}"] = tuple(
            _parse_weighted(t, f"{path}.{_PREFERRED}[{i}]", namespace, labels) for i, t in enumerate(preferred))
    result = PodAffinity(**parsed)
    return result if result != PodAffinity() else None


def _parse_weighted(obj: Any, path: str, namespace: str, labels: Mapping[str, str]) -> WeightedAffinityTerm:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected weight and podAffinityTerm, got {obj!r}")
    weight = obj.get("weight")
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
        raise PodSpecError(f"{path}.weight", f"must be an integer from 1 to 100, got {weight!r}")
    return WeightedAffinityTerm(weight, _parse_term(obj.get("podAffinityTerm"), f"{path}.podAffinityTerm",
                                                    namespace, labels))


def _parse_term(obj: Any, path: str, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a pod affinity term, got {obj!r}")
    topology_key = obj.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise PodSpecError(f"{path}.topologyKey", "must be a non-empty label key")
    selector = parse_label_selector(obj.get("labelSelector"), f"{path}.labelSelector")
    if selector is not None:
        selector = _merge_label_keys(selector, obj, path, labels)
    namespaces = as_list(obj.get("namespaces"), f"{path}.namespaces")
    if not all(isinstance(n, str) for n in namespaces):
        raise PodSpecError(f"{path}.namespaces", f"must be a list of strings, got {namespaces!r}")
    namespace_selector = parse_label_selector(obj.get("namespaceSelector"), f"{path}.namespaceSelector")
    if not namespaces and namespace_selector is None:
        namespaces = [namespace]
    return AffinityTerm(topology_key, selector, frozenset(namespaces), namespace_selector)


def _merge_label_keys(selector: LabelSelector, term: Mapping[str, Any], path: str,
                      labels: Mapping[str, str]) -> LabelSelector:
    added = []
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        keys = as_list(term.get(field), f"{path}.{field}")
        if not all(isinstance(k, str) for k in keys):
            raise PodSpecError(f"{path}.{field}", f"must be a list of label keys, got {keys!r}")
        for key in keys:
            if key in labels:
                req = Requirement(key, operator, frozenset({labels[key]}))
                if req not in selector.requirements and req not in added:
                    added.append(req)
    return LabelSelector(selector.requirements + tuple(added)) if added else selector
