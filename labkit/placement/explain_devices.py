"""The DRA devices behind a pod's verdicts, for explain: kube-scheduler's DynamicResources says only "cannot
allocate all claims" for a node that fails, so this adds kubelab's own detail per node (which devices the node
offers per driver, how many of them claims hold and which claims, and for each request of the pod's claims
still to allocate how many devices its class's and its own selectors accept there and how many of those are
free), and, for claims already allocated (a bound pod's), which devices they hold.

Everything is read from the stores explain lists from the API server (the kinds DynamicResources watches) with
the scheduler's own code: ``scheduler.dra.inventory`` for pools, classes and devices in use, the allocator's
``Allocator.matching`` for what the selectors accept. Nothing here searches for an allocation: whether the
node fits is the plugin's verdict in the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.dra.allocator import AllocationError, Allocator
from scheduler.dra.inventory import classes_of, in_use_of, inventory_of
from scheduler.dra.model import Claim, DeviceClass, allocated_devices
from scheduler.framework import ClusterView, ObjectStore
from scheduler.model import NodeInfo, PodInfo
from scheduler.plugins.dynamic_resources import CLAIMS, CLASSES, SLICES, pod_claims

OURS = 'kubelab\'s detail; kube-scheduler says only "cannot allocate all claims"'
ATTRIBUTES_SHOWN = 3  # attributes per device in a node's listing


@dataclass
class RequestMatch:
    """One request (or firstAvailable subrequest) of a claim to allocate, on one node."""

    claim: str
    request: str  # as allocation results name it: request or request/subrequest
    device_class: str
    selectors: list[str]
    count: int  # 0: allocationMode All
    matching: int  # devices of the node the class's and request's selectors accept
    free: int  # of those, not held by any claim

    @property
    def text(self) -> str:
        wants = "all" if not self.count else str(self.count)
        sel = "".join(f" matching {s!r}" for s in self.selectors)
        return f"request {self.request} of {self.claim} wants {wants} {self.device_class}{sel}: " \
               f"{self.matching} match, {self.free} free"

    def as_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "request": self.request, "device_class": self.device_class,
                "selectors": self.selectors, "count": self.count, "all": not self.count,
                "matching": self.matching, "free": self.free}


@dataclass
class DriverDevices:
    driver: str
    devices: int
    held: int
    held_by: list[str]  # claim keys, sorted

    @property
    def text(self) -> str:
        held = f", {self.held} held by claim{'s' if len(self.held_by) > 1 else ''} {', '.join(self.held_by)}" \
            if self.held else ", none held"
        return f"{self.driver}: {self.devices} device{'s' if self.devices != 1 else ''}{held}"

    def as_json(self) -> dict[str, Any]:
        return {"driver": self.driver, "devices": self.devices, "held": self.held, "held_by": self.held_by}


@dataclass
class NodeDevices:
    node: str
    drivers: list[DriverDevices] = field(default_factory=list)
    requests: list[RequestMatch] = field(default_factory=list)
    error: str = ""  # the allocator's error for this node (a selector failing at run time)

    @property
    def text(self) -> str:
        parts = [d.text for d in self.drivers] or ["no devices published for this node"]
        parts += [r.text for r in self.requests]
        if self.error:
            parts.append(self.error)
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "drivers": [d.as_json() for d in self.drivers],
                "requests": [r.as_json() for r in self.requests], "error": self.error, "detail": self.text}


@dataclass
class ClaimDevices:
    """One of the pod's claims: allocated (the devices it holds) or still to allocate."""

    claim: str
    allocated: bool
    holds: list[dict[str, str]] = field(default_factory=list)  # {request, driver, pool, device}
    reserved_for: list[str] = field(default_factory=list)  # pod names

    def as_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "allocated": self.allocated, "holds": self.holds,
                "reserved_for": self.reserved_for}


@dataclass
class DeviceReport:
    claims: list[ClaimDevices] = field(default_factory=list)
    nodes: list[NodeDevices] = field(default_factory=list)
    problem: str = ""  # why the claims cannot be looked at (missing claim, unknown class, ...)

    def as_json(self) -> dict[str, Any]:
        return {"source": OURS, "problem": self.problem, "claims": [c.as_json() for c in self.claims],
                "nodes": [n.as_json() for n in self.nodes]}


def holders(claims: ObjectStore) -> dict[tuple[str, str, str], str]:
    """(driver, pool, device) -> the key of the claim whose allocation holds it."""
    found: dict[tuple[str, str, str], str] = {}
    for key in claims:
        obj: Any = claims.get(key)
        if obj is None:
            continue
        meta = obj.get("metadata") or {}
        for ident in allocated_devices((obj.get("status") or {}).get("allocation")):
            found[ident] = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    return found


def node_drivers(node: NodeInfo, cluster: ClusterView, held: Mapping[tuple[str, str, str], str]) -> list[DriverDevices]:
    """What each driver publishes for the node (its pools that serve it) and what claims hold of it."""
    by_driver: dict[str, DriverDevices] = {}
    inventory = inventory_of(cluster.objects(SLICES))
    for pool, slices in inventory.pools_for(node.name, node.labels):
        entry = by_driver.setdefault(pool.driver, DriverDevices(pool.driver, 0, 0, []))
        for s in slices:
            for device in s.devices:
                entry.devices += 1
                holder = held.get(device.id)
                if holder is not None:
                    entry.held += 1
                    if holder not in entry.held_by:
                        entry.held_by.append(holder)
    for entry in by_driver.values():
        entry.held_by.sort()
    return list(by_driver.values())


def _claim_devices(claim: Claim) -> ClaimDevices:
    results = ((claim.allocation or {}).get("devices") or {}).get("results") or ()
    return ClaimDevices(claim.key, claim.allocation is not None,
                        [{k: str(r.get(k, "")) for k in ("request", "driver", "pool", "device")} for r in results
                         if isinstance(r, Mapping)],
                        [str(r.get("name", "")) for r in claim.reserved_for])


def device_report(pod: PodInfo, cluster: ClusterView, nodes: Sequence[NodeInfo] | None = None) -> DeviceReport | None:
    """The pod's claims and every node's devices (``nodes``: in this order; default the cluster's), or None
    for a pod without claims or a scheduler that does not watch DRA's kinds."""
    if not pod.resource_claims or CLAIMS not in cluster.kinds or SLICES not in cluster.kinds:
        return None
    store = cluster.objects(CLAIMS)
    report = DeviceReport()
    claims = pod_claims(pod, store)
    if isinstance(claims, str):
        report.problem = claims
        claims = []
    report.claims = [_claim_devices(c) for c in claims]
    to_allocate = [c for c in claims if c.allocation is None]
    classes = {k: v for k, v in classes_of(cluster.objects(CLASSES)).items() if isinstance(v, DeviceClass)} \
        if CLASSES in cluster.kinds else {}
    missing = sorted({r.class_name for c in to_allocate for req in c.requests
                      for r in ([req.exactly] if req.exactly is not None else req.alternatives)
                      if r.class_name not in classes})
    if missing and not report.problem:
        report.problem = f"device class {', '.join(missing)} does not exist"
    allocator = None
    if to_allocate and not missing:
        allocator = Allocator(to_allocate, classes, in_use_of(store), inventory_of(cluster.objects(SLICES)))
    held = holders(store)
    for node in nodes if nodes is not None else cluster.nodes:
        entry = NodeDevices(node.name, node_drivers(node, cluster, held))
        if allocator is not None:
            try:
                matched = allocator.matching(node.name, node.labels)
            except AllocationError as err:
                entry.error = str(err)
                matched = []
            for claim, per_request in zip(to_allocate, matched, strict=False):
                for options in per_request:
                    for request, devices in options:
                        entry.requests.append(RequestMatch(
                            claim.key, request.full_name, request.class_name, list(request.selectors),
                            0 if request.all_mode else request.count, len(devices),
                            sum(1 for d in devices if d.id not in allocator.in_use)))
        report.nodes.append(entry)
    return report
