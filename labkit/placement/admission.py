"""What the API server's admission adds to a pod at creation that the scheduler reads, for a manifest
explained before it exists (`./lab explain --what-if`): the scheduler judges the created pod, so explaining
the manifest as written would judge another pod (a RuntimeClass's overhead alone changes which nodes fit).

Applied, as kube-apiserver 1.36's default admission plugins do it:
- RuntimeClass (plugin/pkg/admission/runtimeclass): ``spec.runtimeClassName``'s ``overhead.podFixed`` becomes
  ``spec.overhead``; its ``scheduling.nodeSelector`` joins the pod's and its ``scheduling.tolerations`` are
  added. A class that does not exist, an overhead that differs from the class's and a conflicting node
  selector are refused, with the plugin's message.
- Priority (plugin/pkg/admission/priority): ``spec.priorityClassName`` (else the globalDefault class) gives
  ``spec.priority`` and ``spec.preemptionPolicy``; an unknown class, or a priority the manifest states that
  differs, is refused.
- DefaultTolerationSeconds: tolerations of the not-ready and unreachable NoExecute taints for 300 s, unless
  the pod tolerates them already.

Not applied, and said so (``Admitted.unknown``): a LimitRange in the pod's namespace (LimitRanger may give
containers default requests). Pure: the caller reads the objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300  # kube-apiserver's --default-not-ready/unreachable-toleration-seconds
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


class AdmissionRefused(ValueError):
    """The API server would refuse to create the pod; the message is its admission plugin's."""


@dataclass(frozen=True)
class ClusterPolicy:
    """The objects admission reads: RuntimeClasses by name, every PriorityClass, the LimitRanges of the
    pod's namespace."""

    runtime_classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    priority_classes: Sequence[Mapping[str, Any]] = ()
    limit_ranges: Sequence[Mapping[str, Any]] = ()


@dataclass
class Admitted:
    pod: dict[str, Any]  # the manifest as the API server would store it (as far as the scheduler reads it)
    added: list[str] = field(default_factory=list)  # what admission added, in words
    unknown: list[str] = field(default_factory=list)  # what admission may change that is not applied here


def admit(manifest: Mapping[str, Any], policy: ClusterPolicy) -> Admitted:
    """``manifest`` as admission would create it. Raises AdmissionRefused."""
    pod = deepcopy(dict(manifest))
    spec = pod.setdefault("spec", {})
    result = Admitted(pod)
    _priority(spec, policy.priority_classes, result)
    _default_tolerations(spec, result)
    _runtime_class(spec, policy.runtime_classes, result)
    if policy.limit_ranges:
        names = ", ".join(sorted(str((r.get("metadata") or {}).get("name")) for r in policy.limit_ranges))
        result.unknown.append(f"LimitRange {names} in the pod's namespace may give its containers default "
                              "requests at creation; they are not applied here")
    return result


def _priority(spec: dict[str, Any], classes: Sequence[Mapping[str, Any]], result: Admitted) -> None:
    name = spec.get("priorityClassName") or ""
    if name:
        chosen = next((c for c in classes if (c.get("metadata") or {}).get("name") == name), None)
        if chosen is None:
            raise AdmissionRefused(f"no PriorityClass with name {name} was found")
    else:
        chosen = next((c for c in classes if c.get("globalDefault")), None)
    value = int(chosen.get("value") or 0) if chosen is not None else 0
    given = spec.get("priority")
    if given is not None and given != value:
        raise AdmissionRefused(f"the integer value of priority ({given}) must not be provided in pod spec; "
                               f"priority admission controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    if chosen is not None:
        class_name = (chosen.get("metadata") or {}).get("name")
        spec["priorityClassName"] = class_name
        result.added.append(f"priority {value} from PriorityClass {class_name}")
        spec.setdefault("preemptionPolicy", chosen.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
    else:
        spec.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)


def _default_tolerations(spec: dict[str, Any], result: Admitted) -> None:
    tolerations = list(spec.get("tolerations") or [])
    for key in (NOT_READY, UNREACHABLE):
        # As DefaultTolerationSeconds: an empty key or effect tolerates that taint already.
        if any(isinstance(t, dict) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
               for t in tolerations):
            continue
        tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
        result.added.append(f"toleration {key}:NoExecute for {DEFAULT_TOLERATION_SECONDS}s")
    spec["tolerations"] = tolerations


def _runtime_class(spec: dict[str, Any], classes: Mapping[str, Mapping[str, Any]], result: Admitted) -> None:
    name = spec.get("runtimeClassName")
    if not name:
        return
    runtime_class = classes.get(name)
    if runtime_class is None:
        raise AdmissionRefused(f'pod rejected: RuntimeClass "{name}" not found')
    fixed = (runtime_class.get("overhead") or {}).get("podFixed")
    if fixed:
        if spec.get("overhead") and spec["overhead"] != fixed:
            raise AdmissionRefused("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        spec["overhead"] = dict(fixed)
        shown = ", ".join(f"{k} {v}" for k, v in sorted(fixed.items()))
        result.added.append(f"overhead {shown} from RuntimeClass {name}")
    scheduling = runtime_class.get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        merged = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in merged and merged[key] != value:
                raise AdmissionRefused(f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                       f"pod.spec.nodeSelector[{key}] = {merged[key]}")
            merged[key] = value
        spec["nodeSelector"] = merged
        result.added.append(f"node selector {selector} from RuntimeClass {name}")
    extra = [t for t in scheduling.get("tolerations") or [] if t not in spec["tolerations"]]
    if extra:
        spec["tolerations"] = spec["tolerations"] + extra
        result.added.append(f"{len(extra)} toleration(s) from RuntimeClass {name}")
