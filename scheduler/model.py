"""Plain hot-path data parsed from the API's JSON dicts: pods, nodes, resources, taints, node affinity.

The scheduler keeps thousands of these in memory, so they are slotted dataclasses built once per watch
event from the camelCase dicts the API sends (never the client's generated models), and the raw object is
not kept. Everything here is pure: no I/O, no clocks, no globals.

Two parsing modes for pods:
- ``PodInfo.from_api(obj)`` (strict) is for pods about to be scheduled. A malformed quantity, toleration or
  node affinity raises ``PodSpecError`` naming the field, so the runtime can report it in a
  FailedScheduling event and go on with other pods.
- ``PodInfo.from_api(obj, lenient=True)`` is for pods already bound to a node: the kubelet runs them
  whatever we think of their spec, so their usage must still be counted. Entries that do not parse are
  skipped and everything that parses is counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.quantity import QuantityError, parse_milli, parse_value

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PODS",
    "PREFER_NO_SCHEDULE",
    "TAINT_NOT_READY",
    "TAINT_UNREACHABLE",
    "TAINT_UNSCHEDULABLE",
    "NodeInfo",
    "NodeSelector",
    "PodInfo",
    "PodSpecError",
    "PreferredTerm",
    "Requirement",
    "Resources",
    "SelectorTerm",
    "Taint",
    "Toleration",
    "is_tolerated",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler scores a container without a cpu/memory request as if it asked for these
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), so best-effort pods still spread.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

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

# isinstance(x, dict) rather than Mapping: the API's JSON decodes to dicts, and the abc check costs
# more than the rest of parsing a field.
_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # what Go's strconv.ParseInt(s, 10, 64) accepts
_NODE_AFFINITY_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_REQUIRED_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED_AFFINITY = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


class PodSpecError(ValueError):
    """A pod field the scheduler cannot interpret; ``field`` is its path, ``reason`` says what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


# --------------------------------------------------------------------------------------------- resources


@dataclass(slots=True)
class Resources:
    """Amounts of each resource: cpu in millicores, memory and ephemeral storage in bytes, a pod count,
    and every other resource (extended resources, hugepages) by name in ``scalar``."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_resource_list(cls, items: Any, field_path: str, lenient: bool = False) -> Resources:
        """Parse a ResourceList dict such as ``{"cpu": "250m", "memory": "64Mi"}``."""
        res = cls()
        if not items:
            return res
        if not isinstance(items, dict):
            if lenient:
                return res
            raise PodSpecError(field_path, f"expected a map of resource name to quantity, got {items!r}")
        for name, value in items.items():
            try:
                res.set(name, value)
            except QuantityError as err:
                if not lenient:
                    raise PodSpecError(f"{field_path}.{name}", str(err)) from None
        return res

    def set(self, name: str, value: str | float) -> None:
        """Set one resource from a quantity; raises QuantityError if it does not parse or is negative."""
        amount = parse_milli(value) if name == CPU else parse_value(value)
        if amount < 0:
            raise QuantityError(f"{value!r} is negative; resource quantities must be zero or more")
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = amount
        elif name == PODS:
            self.pods = amount
        else:
            self.scalar[name] = amount

    def add(self, other: Resources) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.pods += other.pods
        if other.scalar:
            scalar = self.scalar
            for name, value in other.scalar.items():
                scalar[name] = scalar.get(name, 0) + value

    def subtract(self, other: Resources) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.pods -= other.pods
        if other.scalar:
            scalar = self.scalar
            for name, value in other.scalar.items():
                left = scalar.get(name, 0) - value
                if left:
                    scalar[name] = left
                else:
                    scalar.pop(name, None)

    def set_max(self, other: Resources) -> None:
        """Raise each amount to at least ``other``'s (init containers run one at a time)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.pods = max(self.pods, other.pods)
        for name, value in other.scalar.items():
            if value > self.scalar.get(name, 0):
                self.scalar[name] = value

    def copy(self) -> Resources:
        return Resources(self.milli_cpu, self.memory, self.ephemeral_storage, self.pods, dict(self.scalar))

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.pods or self.scalar)


# ------------------------------------------------------------------------------------ taints, tolerations


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


# ------------------------------------------------------------------------------------------ node affinity


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


def _parse_term(obj: Any, path: str) -> SelectorTerm:
    if not isinstance(obj, dict):
        raise PodSpecError(path, f"expected a node selector term, got {obj!r}")
    exprs = _as_list(obj.get("matchExpressions"), f"{path}.matchExpressions")
    fields = _as_list(obj.get("matchFields"), f"{path}.matchFields")
    return SelectorTerm(
        tuple(_parse_requirement(e, f"{path}.matchExpressions[{i}]", False) for i, e in enumerate(exprs)),
        tuple(_parse_requirement(e, f"{path}.matchFields[{i}]", True) for i, e in enumerate(fields)),
    )


def _parse_node_affinity(spec: Mapping[str, Any]) -> tuple[NodeSelector | None, tuple[PreferredTerm, ...]]:
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not node_affinity:
        return None, ()
    if not isinstance(node_affinity, dict):
        raise PodSpecError("spec.affinity.nodeAffinity", f"expected a map, got {node_affinity!r}")
    required = None
    req = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        if not isinstance(req, dict):
            raise PodSpecError(_REQUIRED_AFFINITY, f"expected a map with nodeSelectorTerms, got {req!r}")
        terms = _as_list(req.get("nodeSelectorTerms"), f"{_REQUIRED_AFFINITY}.nodeSelectorTerms")
        required = NodeSelector(
            tuple(_parse_term(t, f"{_REQUIRED_AFFINITY}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))
        )
    preferred = []
    for i, item in enumerate(_as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"),
                                      _PREFERRED_AFFINITY)):
        path = f"{_PREFERRED_AFFINITY}[{i}]"
        if not isinstance(item, dict):
            raise PodSpecError(path, f"expected weight and preference, got {item!r}")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise PodSpecError(f"{path}.weight", f"must be an integer from 1 to 100, got {weight!r}")
        preferred.append(PreferredTerm(weight, _parse_term(item.get("preference") or {}, f"{path}.preference")))
    return required, tuple(preferred)


# ------------------------------------------------------------------------------------------------- pods


def _as_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PodSpecError(path, f"expected a list, got {value!r}")
    return value


def _as_str_map(value: Any, path: str) -> dict[str, str]:
    if not value:
        return {}
    if not isinstance(value, dict):
        raise PodSpecError(path, f"expected a map of strings, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _container_requests(container: Mapping[str, Any], path: str, lenient: bool) -> Resources:
    """A container's requests; a resource with only a limit requests its limit (the API server's
    defaulting does the same, so this only matters for objects that skipped it)."""
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        if lenient:
            return Resources()
        raise PodSpecError(f"{path}.resources", f"expected a map, got {resources!r}")
    requests = Resources.from_resource_list(resources.get("requests"), f"{path}.resources.requests", lenient)
    limits_obj = resources.get("limits")
    if limits_obj:
        limits = Resources.from_resource_list(limits_obj, f"{path}.resources.limits", lenient)
        given = resources.get("requests") or {}
        if not isinstance(given, dict):
            given = {}
        for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
            if name not in given and name in limits_obj:
                setattr(requests, _ATTR[name], getattr(limits, _ATTR[name]))
        for name, value in limits.scalar.items():
            if name not in given:
                requests.scalar[name] = value
    return requests


_ATTR = {CPU: "milli_cpu", MEMORY: "memory", EPHEMERAL_STORAGE: "ephemeral_storage"}


def _non_zero(requests: Resources, container: Mapping[str, Any]) -> Resources:
    """cpu and memory for scoring: a container that names no request counts the scheduler's default."""
    resources = container.get("resources") or {}
    named = set()
    if isinstance(resources, dict):
        for section in ("requests", "limits"):
            part = resources.get(section)
            if isinstance(part, dict):
                named.update(part)
    return Resources(
        requests.milli_cpu if CPU in named else DEFAULT_MILLI_CPU_REQUEST,
        requests.memory if MEMORY in named else DEFAULT_MEMORY_REQUEST,
    )


def _aggregate(regular: list[Resources], init: list[tuple[Resources, bool]], overhead: Resources) -> Resources:
    """Effective pod request, as k8s resourcehelper.PodRequests computes it: containers add up; init
    containers run one at a time, so the pod needs the max of that and each init container (plus the
    restartable "sidecar" init containers started before it, which keep running); then pod overhead."""
    total = Resources()
    for req in regular:
        total.add(req)
    sidecars = Resources()
    init_peak = Resources()
    for req, restartable in init:
        if restartable:
            total.add(req)
            sidecars.add(req)
            init_peak.set_max(sidecars)
        else:
            during = req.copy()
            during.add(sidecars)
            init_peak.set_max(during)
    total.set_max(init_peak)
    total.add(overhead)
    return total


def _parse_tolerations(spec: Mapping[str, Any], lenient: bool) -> tuple[Toleration, ...]:
    result: list[Toleration] = []
    try:
        items = _as_list(spec.get("tolerations"), "spec.tolerations")
    except PodSpecError:
        if lenient:
            return ()
        raise
    for i, item in enumerate(items):
        path = f"spec.tolerations[{i}]"
        try:
            if not isinstance(item, dict):
                raise PodSpecError(path, f"expected a toleration map, got {item!r}")
            operator = item.get("operator") or "Equal"
            effect = item.get("effect") or ""
            key = item.get("key") or ""
            value = item.get("value") or ""
            if operator not in ("Equal", "Exists"):
                raise PodSpecError(f"{path}.operator", f"{operator!r} is not Equal or Exists")
            if effect and effect not in _TAINT_EFFECTS:
                raise PodSpecError(
                    f"{path}.effect", f"{effect!r} is not NoSchedule, PreferNoSchedule or NoExecute"
                )
            if operator == "Exists" and value:
                raise PodSpecError(f"{path}.value", "must be empty when operator is Exists")
            if not key and operator != "Exists":
                raise PodSpecError(f"{path}.operator", "must be Exists when key is empty")
            seconds = item.get("tolerationSeconds")
            result.append(Toleration(str(key), operator, str(value), effect,
                                     seconds if isinstance(seconds, int) else None))
        except PodSpecError:
            if not lenient:
                raise
    return tuple(result)


def _host_ports(containers: Iterable[tuple[Mapping[str, Any], str]], lenient: bool) -> frozenset:
    ports = set()
    for container, path in containers:
        declared = container.get("ports") or []
        if not isinstance(declared, list):
            if lenient:
                continue
            raise PodSpecError(f"{path}.ports", f"expected a list, got {declared!r}")
        for j, port in enumerate(declared):
            if not isinstance(port, dict):
                continue
            host_port = port.get("hostPort")
            if not host_port:
                continue
            if not isinstance(host_port, int) or isinstance(host_port, bool) or not 0 < host_port < 65536:
                if lenient:
                    continue
                raise PodSpecError(f"{path}.ports[{j}].hostPort", f"must be 1-65535, got {host_port!r}")
            ports.add((port.get("protocol") or "TCP", port.get("hostIP") or "0.0.0.0", host_port))
    return frozenset(ports)


@dataclass(slots=True, eq=False)
class PodInfo:
    """What the scheduler needs of a pod. ``requests`` is the effective request with ``pods=1``;
    ``non_zero_milli_cpu``/``non_zero_memory`` are the same with the scheduler's defaults for containers
    that request nothing (used by scoring only)."""

    uid: str
    namespace: str
    name: str
    resource_version: str = ""
    scheduler_name: str = "default-scheduler"
    node_name: str | None = None
    phase: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requests: Resources = field(default_factory=lambda: Resources(pods=1))
    non_zero_milli_cpu: int = DEFAULT_MILLI_CPU_REQUEST
    non_zero_memory: int = DEFAULT_MEMORY_REQUEST
    node_selector: dict[str, str] = field(default_factory=dict)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: frozenset[tuple[str, str, int]] = frozenset()
    priority: int = 0
    creation_timestamp: str = ""
    deletion_timestamp: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_api(cls, obj: Mapping[str, Any], lenient: bool = False) -> PodInfo:
        """Build from a core/v1 Pod dict. Strict mode raises PodSpecError naming the bad field; lenient
        mode (pods already bound) skips what does not parse and counts the rest."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not isinstance(meta, dict) or not isinstance(spec, dict):
            raise PodSpecError("metadata" if not isinstance(meta, dict) else "spec", "expected a map")
        regular: list[Resources] = []
        regular_nz: list[Resources] = []
        init: list[tuple[Resources, bool]] = []
        init_nz: list[tuple[Resources, bool]] = []
        port_sources: list[tuple[Mapping[str, Any], str]] = []
        for section in ("containers", "initContainers"):
            try:
                items = _as_list(spec.get(section), f"spec.{section}")
            except PodSpecError:
                if lenient:
                    continue
                raise
            for i, container in enumerate(items):
                path = f"spec.{section}[{i}]"
                if not isinstance(container, dict):
                    if lenient:
                        continue
                    raise PodSpecError(path, f"expected a container map, got {container!r}")
                req = _container_requests(container, path, lenient)
                nz = _non_zero(req, container)
                if section == "containers":
                    regular.append(req)
                    regular_nz.append(nz)
                    port_sources.append((container, path))
                else:
                    restartable = container.get("restartPolicy") == "Always"
                    init.append((req, restartable))
                    init_nz.append((nz, restartable))
                    if restartable:
                        port_sources.append((container, path))
        overhead = Resources.from_resource_list(spec.get("overhead"), "spec.overhead", lenient)
        requests = _aggregate(regular, init, overhead)
        requests.pods = 1
        non_zero = _aggregate(regular_nz, init_nz, Resources(overhead.milli_cpu, overhead.memory))
        try:
            required, preferred = _parse_node_affinity(spec)
        except PodSpecError:
            if not lenient:
                raise
            required, preferred = None, ()
        priority = spec.get("priority")
        return cls(
            uid=str(meta.get("uid") or ""),
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=spec.get("nodeName") or None,
            phase=str(status.get("phase") or "") if isinstance(status, dict) else "",
            labels=_lenient_map(meta.get("labels"), "metadata.labels", lenient),
            annotations=_lenient_map(meta.get("annotations"), "metadata.annotations", lenient),
            requests=requests,
            non_zero_milli_cpu=non_zero.milli_cpu,
            non_zero_memory=non_zero.memory,
            node_selector=_lenient_map(spec.get("nodeSelector"), "spec.nodeSelector", lenient),
            required_node_affinity=required,
            preferred_node_affinity=preferred,
            tolerations=_parse_tolerations(spec, lenient),
            host_ports=_host_ports(port_sources, lenient),
            priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            deletion_timestamp=meta.get("deletionTimestamp") or None,
        )


def _lenient_map(value: Any, path: str, lenient: bool) -> dict[str, str]:
    try:
        return _as_str_map(value, path)
    except PodSpecError:
        if lenient:
            return {}
        raise


# ------------------------------------------------------------------------------------------------ nodes


@dataclass(slots=True, eq=False)
class NodeInfo:
    """A node plus the pods the scheduler counts on it (bound and assumed).

    ``used_ports`` maps (protocol, hostPort) to {hostIP: number of pods using it}, so a wildcard 0.0.0.0
    can be checked against every address in one lookup. ``generation`` is bumped on every change so a
    cache can tell which snapshots are stale.
    """

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Resources = field(default_factory=Resources)
    unschedulable: bool = False
    requested: Resources = field(default_factory=Resources)
    non_zero_requested: Resources = field(default_factory=Resources)
    pod_count: int = 0
    used_ports: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)
    generation: int = 0
    resource_version: str = ""

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> NodeInfo:
        """Build from a core/v1 Node dict (no pods yet)."""
        info = cls(name=str((obj.get("metadata") or {}).get("name") or ""))
        info._load(obj)
        info.generation = 1
        return info

    def update_node(self, obj: Mapping[str, Any]) -> None:
        """Take a new version of the Node object, keeping the pods counted on it."""
        self._load(obj)
        self.generation += 1

    def _load(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        self.labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.unschedulable = bool(spec.get("unschedulable"))
        # Allocatable is what pods may use; a node object without it (never seen on a kubelet-registered
        # node) falls back to capacity rather than looking full.
        resources = status.get("allocatable") or status.get("capacity") or {}
        self.allocatable = Resources.from_resource_list(resources, f"node {self.name} status.allocatable",
                                                        lenient=True)
        taints = [
            Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
            for t in spec.get("taints") or []
            if isinstance(t, dict)
        ]
        self.taints = tuple(taints + _condition_taints(status.get("conditions") or [], taints))

    # pods ------------------------------------------------------------------------------------------

    def add_pod(self, pod: PodInfo) -> None:
        """Count a pod on this node; adding a pod with a known uid replaces the old version."""
        if pod.uid in self.pods:
            self.remove_pod(self.pods[pod.uid])
        self.pods[pod.uid] = pod
        self.pod_count += 1
        self.requested.add(pod.requests)
        self.non_zero_requested.milli_cpu += pod.non_zero_milli_cpu
        self.non_zero_requested.memory += pod.non_zero_memory
        for protocol, ip, port in pod.host_ports:
            ips = self.used_ports.setdefault((protocol, port), {})
            ips[ip] = ips.get(ip, 0) + 1
        self.generation += 1

    def remove_pod(self, pod: PodInfo) -> bool:
        """Stop counting a pod (by uid, using the version that was added); False if it was not here."""
        known = self.pods.pop(pod.uid, None)
        if known is None:
            return False
        self.pod_count -= 1
        self.requested.subtract(known.requests)
        self.non_zero_requested.milli_cpu -= known.non_zero_milli_cpu
        self.non_zero_requested.memory -= known.non_zero_memory
        for protocol, ip, port in known.host_ports:
            ips = self.used_ports.get((protocol, port))
            if ips is None:
                continue
            left = ips.get(ip, 0) - 1
            if left > 0:
                ips[ip] = left
            else:
                ips.pop(ip, None)
                if not ips:
                    del self.used_ports[(protocol, port)]
        self.generation += 1
        return True

    def clone(self) -> NodeInfo:
        """An independent copy for a snapshot: PodInfo objects are shared (never mutated), containers
        are copied."""
        return NodeInfo(
            name=self.name,
            labels=self.labels,  # replaced, never mutated, by _load
            taints=self.taints,
            allocatable=self.allocatable,  # replaced, never mutated, by _load
            unschedulable=self.unschedulable,
            requested=self.requested.copy(),
            non_zero_requested=self.non_zero_requested.copy(),
            pod_count=self.pod_count,
            used_ports={k: dict(v) for k, v in self.used_ports.items()},
            pods=dict(self.pods),
            generation=self.generation,
            resource_version=self.resource_version,
        )


def _condition_taints(conditions: list[Any], existing: list[Taint]) -> list[Taint]:
    """Taints the node lifecycle controller would add for these conditions but that the node object does
    not carry yet. The controller taints a node a few seconds after its condition changes; deriving them
    here means a not-ready node is avoided at once, and with the same reason text users know from
    kube-scheduler ("untolerated taint {node.kubernetes.io/not-ready: }")."""
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
