"""Resource amounts (cpu, memory, ephemeral storage, pods, extended resources) and a pod's effective request
as kube-scheduler computes it from its containers, init containers and overhead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.parsing import ParsePolicy, PodSpecError
from scheduler.quantity import QuantityError, parse_milli, parse_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler scores a container without a cpu/memory request as if it asked for these
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), so best-effort pods still spread.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


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
    def from_resource_list(cls, items: Any, field_path: str, policy: ParsePolicy) -> Resources:
        """Parse a ResourceList dict such as ``{"cpu": "250m", "memory": "64Mi"}``."""
        res = cls()
        if not items:
            return res
        if not isinstance(items, dict):
            policy.unreadable(
                PodSpecError(field_path, f"expected a map of resource name to quantity, got {items!r}"))
            return res
        for name, value in items.items():
            try:
                res.set(name, value)
            except QuantityError as err:
                policy.unreadable(PodSpecError(f"{field_path}.{name}", str(err)))
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


_ATTR = {CPU: "milli_cpu", MEMORY: "memory", EPHEMERAL_STORAGE: "ephemeral_storage"}


def container_requests(container: Mapping[str, Any], path: str, policy: ParsePolicy) -> Resources:
    """A container's requests; a resource with only a limit requests its limit (the API server's
    defaulting does the same, so this only matters for objects that skipped it)."""
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        policy.unreadable(PodSpecError(f"{path}.resources", f"expected a map, got {resources!r}"))
        return Resources()
    requests = Resources.from_resource_list(resources.get("requests"), f"{path}.resources.requests", policy)
    limits_obj = resources.get("limits")
    if limits_obj:
        limits = Resources.from_resource_list(limits_obj, f"{path}.resources.limits", policy)
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


def non_zero_requests(requests: Resources, container: Mapping[str, Any]) -> Resources:
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


HUGE_PAGES_PREFIX = "hugepages-"


def pod_level_requests(spec: Mapping[str, Any], policy: ParsePolicy) -> tuple[Resources, frozenset[str]]:
    """``spec.resources`` (pod-level resources, beta and on by default since Kubernetes 1.34): the requests of
    the resources it may set (cpu, memory, hugepages-*; a resource with only a limit requests its limit, as
    the API server defaults it) and their names; empty when it sets none."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return Resources(), frozenset()
    named = set()
    for section in ("requests", "limits"):
        part = resources.get(section)
        if isinstance(part, dict):
            named.update(str(name) for name in part)
    names = frozenset(n for n in named if n in (CPU, MEMORY) or n.startswith(HUGE_PAGES_PREFIX))
    if not names:
        return Resources(), names
    return container_requests(spec, "spec", policy), names


def pod_requests(
    regular: list[Resources], init: list[tuple[Resources, bool]], overhead: Resources,
    pod_level: Resources | None = None, pod_level_names: frozenset[str] = frozenset(),
) -> Resources:
    """Effective pod request, as k8s resourcehelper.PodRequests computes it: containers add up; init
    containers run one at a time, so the pod needs the max of that and each init container (plus the
    restartable "sidecar" init containers started before it, which keep running); a resource the pod sets
    at pod level (``pod_level_names``) is ``pod_level``'s instead; then pod overhead."""
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
    if pod_level is not None:
        for name in pod_level_names:
            attr = _ATTR.get(name)
            if attr is not None:
                setattr(total, attr, getattr(pod_level, attr))
            elif name in pod_level.scalar:
                total.scalar[name] = pod_level.scalar[name]
            else:
                total.scalar.pop(name, None)
    total.add(overhead)
    return total
