"""The resource.k8s.io/v1 objects DynamicResources reads, parsed once: ResourceSlices (their pool, which nodes
they serve, their devices), DeviceClasses and ResourceClaims (requests, ``firstAvailable`` subrequests,
``matchAttribute`` constraints, configuration, ``status``).

What the API allows and this scheduler does not implement (admin access, device taints, consumable
capacity, partitionable devices and counters, binding conditions, per-device node selection, distinct
attributes) is never ignored: parsing records it as an ``Unsupported`` naming the object and field, and the
plugin refuses the pods it would concern. A value the API server would never send (a missing name, a count
that is not a number) raises ``DraError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.affinity import NodeSelector, parse_node_selector
from scheduler.model.parsing import PodSpecError

__all__ = ["ALL", "EXACT_COUNT", "FINALIZER", "MAX_ALLOCATION_RESULTS", "MAX_SUBREQUESTS", "Claim", "ClaimRequest",
           "Device", "DeviceClass", "DraError", "MatchAttribute", "Request", "Slice", "Unsupported",
           "parse_claim", "parse_class", "parse_slice"]

EXACT_COUNT, ALL = "ExactCount", "All"
FINALIZER = "resource.kubernetes.io/delete-protection"  # what kube-scheduler puts on a claim it allocates
MAX_ALLOCATION_RESULTS = 32  # resourceapi.AllocationResultsMaxSize: devices per claim
MAX_SUBREQUESTS = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize: the base of the firstAvailable score
MAX_RESERVED_FOR = 256  # resourceapi.ResourceClaimReservedForMaxSize: pods sharing one claim


class DraError(ValueError):
    """An object the API server would not have accepted: ``where`` names the object and field."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where, self.reason = where, reason


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A field of the DRA API this scheduler does not implement, where it was found."""

    where: str  # e.g. 'ResourceClaim dra-a/c0: spec.devices.requests[0].exactly.adminAccess'
    what: str  # e.g. 'admin access'

    def __str__(self) -> str:
        return f"{self.where}: {self.what} is not supported by this scheduler"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DraError(where, f"expected a list, got {value!r}")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise DraError(where, f"expected a name, got {value!r}")
    return value


# ---- ResourceSlices -------------------------------------------------------------------------------------------

_DEVICE_UNSUPPORTED = {
    "consumesCounters": "partitionable devices (consumesCounters)",
    "taints": "device taints",
    "bindingConditions": "device binding conditions",
    "bindingFailureConditions": "device binding conditions",
    "bindsToNode": "device binding conditions (bindsToNode)",
    "allowMultipleAllocations": "consumable capacity (allowMultipleAllocations)",
    "nodeName": "per-device node selection",
    "nodeSelector": "per-device node selection",
    "allNodes": "per-device node selection",
}
_SLICE_UNSUPPORTED = {
    "perDeviceNodeSelection": "per-device node selection",
    "sharedCounters": "partitionable devices (sharedCounters)",
}


@dataclass(frozen=True, slots=True, eq=False)
class Device:
    """One device of a slice: its id (driver, pool, name), its attributes as written (for matchAttribute) and
    the slice that publishes it (which nodes it serves). ``view`` is what CEL selectors see, built on first
    use; ``matches`` caches selector verdicts by expression."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, Any]
    raw: Mapping[str, Any]
    slice: Slice
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)
    id: tuple[str, str, str] = field(default=("", "", ""), repr=False)  # (driver, pool, name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", (self.driver, self.pool, self.name))

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"

    def attribute(self, qualified: str) -> tuple[str, Any] | None:
        """(type, value) of a fully qualified attribute (``domain/id``), as kube-scheduler looks it up: the
        name as written, or the bare id when the domain is the driver's; None when the device has none."""
        value = self.attributes.get(qualified)
        if value is None:
            domain, _, ident = qualified.partition("/")
            if not ident or domain != self.driver:
                return None
            value = self.attributes.get(ident)
        if not isinstance(value, Mapping):
            return None
        for kind in ("string", "int", "bool", "version"):
            if kind in value:
                return kind, value[kind]
        return None


@dataclass(frozen=True, slots=True, eq=False)
class Slice:
    """One ResourceSlice: its pool and generation, which nodes it serves (``node_name``, ``node_selector``,
    ``all_nodes``) and its devices (filled in by ``parse_slice``)."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    node_selector: NodeSelector | None
    node_selector_raw: Mapping[str, Any] | None
    all_nodes: bool
    devices: list[Device] = field(default_factory=list)
    unsupported: tuple[Unsupported, ...] = ()

    def serves(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if self.node_name:
            return self.node_name == node_name
        if self.all_nodes:
            return True
        return self.node_selector is not None and self.node_selector.matches(node_name, labels)


def parse_slice(obj: Mapping[str, Any]) -> Slice:
    name = str(_get(obj.get("metadata"), "name") or "")
    where = f"ResourceSlice {name}"
    spec = obj.get("spec") or {}
    pool = spec.get("pool") or {}
    selector_raw = spec.get("nodeSelector")
    try:
        selector = parse_node_selector(selector_raw, "spec.nodeSelector") if selector_raw else None
    except PodSpecError as err:
        raise DraError(f"{where}: {err.field}", err.reason) from None
    unsupported = [Unsupported(f"{where}: spec.{key}", what) for key, what in _SLICE_UNSUPPORTED.items()
                   if spec.get(key)]
    result = Slice(
        name=name,
        driver=_name(spec.get("driver"), f"{where}: spec.driver"),
        pool=_name(pool.get("name"), f"{where}: spec.pool.name"),
        generation=int(pool.get("generation") or 0),
        slice_count=int(pool.get("resourceSliceCount") or 1),
        node_name=str(spec.get("nodeName") or ""),
        node_selector=selector,
        node_selector_raw=selector_raw,
        all_nodes=bool(spec.get("allNodes")),
    )
    for i, dev in enumerate(_list(spec.get("devices"), f"{where}: spec.devices")):
        path = f"{where}: spec.devices[{i}]"
        unsupported += [Unsupported(f"{path}.{key}", what) for key, what in _DEVICE_UNSUPPORTED.items()
                        if dev.get(key)]
        for cap_name, cap in (dev.get("capacity") or {}).items():
            if isinstance(cap, Mapping) and cap.get("requestPolicy"):
                unsupported.append(Unsupported(f"{path}.capacity.{cap_name}.requestPolicy", "consumable capacity"))
        result.devices.append(Device(result.driver, result.pool, _name(dev.get("name"), f"{path}.name"),
                                     dev.get("attributes") or {}, dev, result))
    object.__setattr__(result, "unsupported", tuple(unsupported))
    return result


# ---- DeviceClasses --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]  # CEL expressions
    config: tuple[Mapping[str, Any], ...]
    unsupported: tuple[Unsupported, ...] = ()


def parse_class(obj: Mapping[str, Any]) -> DeviceClass:
    name = str(_get(obj.get("metadata"), "name") or "")
    where = f"DeviceClass {name}"
    spec = obj.get("spec") or {}
    selectors = _selectors(spec.get("selectors"), f"{where}: spec.selectors")
    unsupported = ()
    if spec.get("extendedResourceName"):
        unsupported = (Unsupported(f"{where}: spec.extendedResourceName", "extended resources backed by DRA"),)
    return DeviceClass(name, tuple(selectors), tuple(_list(spec.get("config"), f"{where}: spec.config")), unsupported)


# ---- ResourceClaims -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Request:
    """A request that names its devices itself (``exactly``), or one subrequest of a ``firstAvailable`` list
    (``parent`` is then the request's name)."""

    name: str
    parent: str
    class_name: str
    selectors: tuple[str, ...]
    all_mode: bool
    count: int
    path: str  # the field of the claim it is written in, for errors

    @property
    def full_name(self) -> str:
        """As allocation results name it: ``request`` or ``request/subrequest``."""
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One entry of ``spec.devices.requests``: ``exactly`` one request, or ``alternatives`` (firstAvailable)."""

    name: str
    exactly: Request | None
    alternatives: tuple[Request, ...] = ()


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    requests: frozenset[str]  # empty: every request of the claim
    attribute: str  # fully qualified

    def applies(self, request: Request) -> bool:
        if not self.requests:
            return True
        return (request.parent or request.name) in self.requests or (
            bool(request.parent) and request.full_name in self.requests)


@dataclass(frozen=True, slots=True)
class Claim:
    namespace: str
    name: str
    uid: str
    requests: tuple[ClaimRequest, ...]
    constraints: tuple[MatchAttribute, ...]
    config: tuple[Mapping[str, Any], ...]
    allocation: Mapping[str, Any] | None
    reserved_for: tuple[Mapping[str, Any], ...]
    deleting: bool
    owners: tuple[str, ...]  # the uids of its controller owners
    finalizers: tuple[str, ...]
    raw: Mapping[str, Any]
    unsupported: tuple[Unsupported, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _selectors(value: Any, field: str) -> list[str]:
    """The CEL expressions of a selectors list (``field`` names it in errors)."""
    expressions = []
    for i, sel in enumerate(_list(value, field)):
        expression = _get(_get(sel, "cel"), "expression")
        if not isinstance(expression, str):
            raise DraError(f"{field}[{i}].cel.expression", "a CEL expression is required")
        expressions.append(expression)
    return expressions


def _request(obj: Mapping[str, Any], name: str, parent: str, path: str, where: str,
             unsupported: list[Unsupported]) -> Request:
    if obj.get("adminAccess"):
        unsupported.append(Unsupported(f"{where}: {path}.adminAccess", "admin access"))
    if obj.get("capacity"):
        unsupported.append(Unsupported(f"{where}: {path}.capacity", "consumable capacity"))
    selectors = _selectors(obj.get("selectors"), f"{where}: {path}.selectors")
    mode = obj.get("allocationMode") or EXACT_COUNT
    if mode not in (EXACT_COUNT, ALL):
        raise DraError(f"{where}: {path}.allocationMode", f"unsupported count mode {mode}")
    count = obj.get("count", 1) if mode == EXACT_COUNT else 0
    if not isinstance(count, int) or isinstance(count, bool) or (mode == EXACT_COUNT and count < 1):
        raise DraError(f"{where}: {path}.count", f"expected a positive integer, got {count!r}")
    class_name = obj.get("deviceClassName")
    if not isinstance(class_name, str):
        class_name = ""
    return Request(name, parent, class_name, tuple(selectors), mode == ALL, int(count or 0), path)


def parse_claim(obj: Mapping[str, Any]) -> Claim:
    meta = obj.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    where = f"ResourceClaim {namespace}/{name}"
    devices = _get(obj.get("spec"), "devices") or {}
    unsupported: list[Unsupported] = []
    requests = []
    for i, req in enumerate(_list(devices.get("requests"), f"{where}: spec.devices.requests")):
        path = f"spec.devices.requests[{i}]"
        req_name = _name(_get(req, "name"), f"{where}: {path}.name")
        if req.get("exactly") is not None:
            requests.append(ClaimRequest(req_name, _request(req["exactly"], req_name, "", f"{path}.exactly", where,
                                                            unsupported)))
            continue
        subs = []
        for j, sub in enumerate(_list(req.get("firstAvailable"), f"{where}: {path}.firstAvailable")):
            sub_path = f"{path}.firstAvailable[{j}]"
            subs.append(_request(sub, _name(_get(sub, "name"), f"{where}: {sub_path}.name"), req_name, sub_path,
                                 where, unsupported))
        requests.append(ClaimRequest(req_name, None, tuple(subs)))
    constraints = []
    for i, con in enumerate(_list(devices.get("constraints"), f"{where}: spec.devices.constraints")):
        path = f"spec.devices.constraints[{i}]"
        if con.get("distinctAttribute"):
            unsupported.append(Unsupported(f"{where}: {path}.distinctAttribute", "distinct attributes"))
            continue
        attribute = con.get("matchAttribute")
        if not isinstance(attribute, str) or "/" not in attribute:
            raise DraError(f"{where}: {path}", "empty constraint (unsupported constraint type?)")
        constraints.append(MatchAttribute(frozenset(con.get("requests") or ()), attribute))
    status = obj.get("status") or {}
    allocation = status.get("allocation") or None
    if allocation is not None:
        for i, result in enumerate(_get(allocation.get("devices"), "results") or ()):
            if result.get("adminAccess"):
                unsupported.append(Unsupported(f"{where}: status.allocation.devices.results[{i}].adminAccess",
                                               "admin access"))
    return Claim(
        namespace=namespace, name=name, uid=str(meta.get("uid") or ""),
        requests=tuple(requests), constraints=tuple(constraints),
        config=tuple(_list(devices.get("config"), f"{where}: spec.devices.config")),
        allocation=allocation,
        reserved_for=tuple(r for r in status.get("reservedFor") or () if isinstance(r, Mapping)),
        deleting=bool(meta.get("deletionTimestamp")),
        owners=tuple(str(o.get("uid") or "") for o in meta.get("ownerReferences") or ()
                     if isinstance(o, Mapping) and o.get("controller")),
        finalizers=tuple(meta.get("finalizers") or ()),
        raw=obj,
        unsupported=tuple(unsupported),
    )


def allocated_devices(allocation: Mapping[str, Any] | None) -> Sequence[tuple[str, str, str]]:
    """The (driver, pool, device) ids an allocation holds for itself (an admin's access holds none)."""
    if not allocation:
        return ()
    return [(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            for r in _get(allocation.get("devices"), "results") or ()
            if isinstance(r, Mapping) and not r.get("adminAccess")]
