"""A pod's ``spec.topologySpreadConstraints`` and the label selectors they count pods with, parsed strictly
(the first problem raises PodSpecError naming the field).

``matchLabelKeys`` is folded into the selector here, as kube-scheduler does when the API server has not
already merged it: each listed key the pod carries adds ``key in (the pod's value)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.affinity import Requirement
from scheduler.model.labels import LabelSelector, parse_label_selector
from scheduler.model.parsing import PodSpecError, as_list

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
_PATH = "spec.topologySpreadConstraints"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy: Honor (the default)
    honor_node_taints: bool = False  # nodeTaintsPolicy: Ignore (the default)


def parse_topology_spread(spec: Mapping[str, Any], labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """The pod's constraints, with matchLabelKeys merged into each selector from the pod's ``labels``."""
    constraints = []
    for i, item in enumerate(as_list(spec.get("topologySpreadConstraints"), _PATH)):
        path = f"{_PATH}[{i}]"
        if not isinstance(item, dict):
            raise PodSpecError(path, f"expected a map, got {item!r}")
        max_skew = item.get("maxSkew")
        if not _positive_int(max_skew):
            raise PodSpecError(f"{path}.maxSkew", f"must be an integer greater than 0, got {max_skew!r}")
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise PodSpecError(f"{path}.topologyKey", "required (a node label key such as topology.kubernetes.io/zone)")
        when = item.get("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise PodSpecError(f"{path}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {when!r}")
        min_domains = item.get("minDomains")
        if min_domains is not None and not _positive_int(min_domains):
            raise PodSpecError(f"{path}.minDomains", f"must be an integer greater than 0, got {min_domains!r}")
        # An absent labelSelector counts no pod (kube-scheduler converts it with LabelSelectorAsSelector).
        selector = (parse_label_selector(item.get("labelSelector"), f"{path}.labelSelector")
                    or LabelSelector(nothing=True))
        keys = as_list(item.get("matchLabelKeys"), f"{path}.matchLabelKeys")
        merged = tuple(Requirement(k, "In", frozenset({labels[k]})) for k in keys if k in labels)
        if merged and not selector.nothing:
            selector = LabelSelector(selector.requirements + merged)
        constraints.append(SpreadConstraint(
            max_skew=max_skew, topology_key=key, when_unsatisfiable=when, selector=selector,
            min_domains=min_domains or 1,
            honor_node_affinity=_policy(item, "nodeAffinityPolicy", HONOR, path) == HONOR,
            honor_node_taints=_policy(item, "nodeTaintsPolicy", IGNORE, path) == HONOR,
        ))
    return tuple(constraints)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _policy(item: Mapping[str, Any], name: str, default: str, path: str) -> str:
    value = item.get(name) or default
    if value not in (HONOR, IGNORE):
        raise PodSpecError(f"{path}.{name}", f"must be Honor or Ignore, got {value!r}")
    return value
