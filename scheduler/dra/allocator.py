"""The device search kube-scheduler 1.36's structured allocator makes on one node, so that this scheduler
picks the same devices: claims in the pod's order, each claim's requests in order, each request's devices one
at a time; for each device the candidates in pool order (driver, then pool name), slice order and device
order, skipping devices in use or taken earlier in this search, devices the class's and the request's CEL
selectors refuse, and devices breaking a ``matchAttribute`` constraint; on a dead end it backtracks. The
first complete solution wins. A ``firstAvailable`` request tries its subrequests in order and keeps the first
that leads to a solution. ``allocationMode: All`` takes every matching device of the node's pools: all must
be free (one in use, and the node has no solution) and there must be at least one.

``Allocator`` is made once per pod and cycle (the claims to allocate, the classes, the devices in use);
``allocate(node_name, labels)`` answers for one node: the allocation of each claim, None when there is none,
or ``AllocationError`` where kube-scheduler fails with an error instead (a constraint an ``All`` request
cannot meet, a selector failing at run time), with kube-scheduler's message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.dra.cel import CelError, DeviceSelector, compile_selector, device_view
from scheduler.dra.inventory import Inventory, Pool
from scheduler.dra.model import (
    MAX_ALLOCATION_RESULTS,
    Claim,
    Device,
    DeviceClass,
    MatchAttribute,
    Request,
    Slice,
)

__all__ = ["Allocation", "AllocationError", "Allocator"]


class AllocationError(Exception):
    """kube-scheduler fails the scheduling attempt with this message instead of deciding."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """One claim's allocation on a node: (request name as results write it, device) pairs, and the result
    kube-scheduler writes to ``status.allocation``."""

    devices: tuple[tuple[str, Device], ...]
    claim: Claim
    picked: tuple[tuple[str, DeviceClass], ...]  # per request: the name results use and the class of the option taken

    @property
    def config(self) -> tuple[Mapping[str, Any], ...]:
        return allocation_config(self.claim, self.picked)

    def subrequests(self) -> set[str]:
        return {name for name, _ in self.devices if "/" in name}

    def status(self) -> dict[str, Any]:
        """``status.allocation`` as kube-scheduler writes it (without allocationTimestamp)."""
        devices: dict[str, Any] = {"results": [
            {"request": name, "driver": d.driver, "pool": d.pool, "device": d.name} for name, d in self.devices]}
        if self.config:
            devices["config"] = [dict(c) for c in self.config]
        result: dict[str, Any] = {"devices": devices}
        selector = node_selector([d.slice for _, d in self.devices])
        if selector is not None:
            result["nodeSelector"] = selector
        return result


def allocation_config(claim: Claim, picked: Sequence[tuple[str, DeviceClass]]) -> tuple[Mapping[str, Any], ...]:
    """The configuration the results carry, as kube-scheduler's allocator builds it: each class's config once,
    naming the requests (or subrequests) that used the class; then each of the claim's own entries, once for
    an entry naming no request and once per request it names (by the request's name, or by
    ``request/subrequest`` for the alternative taken); an entry naming as many requests as the claim has names
    none."""
    config: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    for name, cls in picked:
        if cls.name in by_class:
            for entry in by_class[cls.name]:
                entry["requests"].append(name)
            continue
        entries = [{"source": "FromClass", "requests": [name], **{k: v for k, v in c.items() if k != "requests"}}
                   for c in cls.config]
        by_class[cls.name] = entries
        config += entries
    for entry in claim.config:
        wanted = list(entry.get("requests") or [])
        body = {k: v for k, v in entry.items() if k != "requests"}
        if not wanted:
            config.append({"source": "FromClaim", "requests": [], **body})
            continue
        for request, (name, _) in zip(claim.requests, picked, strict=True):
            if request.name in wanted or ("/" in name and name in wanted):
                config.append({"source": "FromClaim", "requests": list(wanted), **body})
    for entry in config:
        if not entry["requests"] or len(entry["requests"]) == len(claim.requests):
            entry.pop("requests")
    return tuple(config)


def node_selector(slices: Sequence[Slice]) -> dict[str, Any] | None:
    """Where the devices are usable: the node of the first node-local device, else the requirements of the
    shared slices' selectors merged into one term, else everywhere (None)."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for s in slices:
        if s.node_name:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [s.node_name]}]}]}
        terms = (s.node_selector_raw or {}).get("nodeSelectorTerms") or []
        if len(terms) == 1:
            for source, into in ((terms[0].get("matchFields") or [], fields),
                                 (terms[0].get("matchExpressions") or [], expressions)):
                for req in source:
                    if not any(_same_requirement(req, have) for have in into):
                        into.append(req)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [dict(r) for r in expressions]
    if fields:
        term["matchFields"] = [dict(r) for r in fields]
    return {"nodeSelectorTerms": [term]}


def _same_requirement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("operator") == b.get("operator") and \
        set(a.get("values") or ()) == set(b.get("values") or ())


@dataclass(slots=True)
class _Want:
    """One request or subrequest being allocated: its class, its compiled selectors, how many devices."""

    request: Request
    device_class: DeviceClass
    class_selectors: tuple[DeviceSelector, ...]
    selectors: tuple[DeviceSelector, ...]
    count: int = 0
    class_key: tuple[str, ...] = ()  # the selectors' expressions: the key of a device's cached verdict
    request_key: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.class_key = ("class", *(s.expression for s in self.class_selectors))
        self.request_key = ("request", *(s.expression for s in self.selectors))


class _Constraint:
    """A matchAttribute constraint while searching: the value the first device set, how many share it."""

    __slots__ = ("count", "rule", "value")

    def __init__(self, rule: MatchAttribute) -> None:
        self.rule, self.value, self.count = rule, None, 0

    def add(self, request: Request, device: Device) -> bool:
        if not self.rule.applies(request):
            return True
        value = device.attribute(self.rule.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        if value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: Request) -> None:
        if self.rule.applies(request):
            self.count -= 1


def compile_all(expressions: Sequence[str], path: str, owner: str) -> tuple[DeviceSelector, ...]:
    """Compile selectors; one that does not compile is AllocationError in kube-scheduler's allocator's words
    (``owner``: "class gpu", "claim ns/name")."""
    compiled = []
    for i, expression in enumerate(expressions):
        try:
            compiled.append(compile_selector(expression, f"{path}[{i}].cel.expression"))
        except CelError as err:
            raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {err.reason}") from None
    return tuple(compiled)


class Allocator:
    """The search for one pod's claims to allocate (see the module docstring)."""

    def __init__(self, claims: Sequence[Claim], classes: Mapping[str, DeviceClass], in_use: frozenset,
                 inventory: Inventory) -> None:
        """``classes`` must hold every class the claims name (the plugin's PreFilter checked)."""
        self.claims = list(claims)
        self.in_use = in_use
        self.inventory = inventory
        self.classes = classes
        # per claim, per request: the wants (one, or one per subrequest)
        self.wants: list[list[list[_Want]]] = []
        # A selector that does not compile fails every node's search, as kube-scheduler's Allocate does.
        self.error: AllocationError | None = None
        try:
            for claim in self.claims:
                per_request = []
                for req in claim.requests:
                    options = [req.exactly] if req.exactly is not None else list(req.alternatives)
                    per_request.append([self._want(claim, r) for r in options])
                self.wants.append(per_request)
        except AllocationError as err:
            self.error = err

    def _want(self, claim: Claim, request: Request) -> _Want:
        cls = self.classes[request.class_name]
        return _Want(request, cls, compile_all(cls.selectors, f"DeviceClass {cls.name}: spec.selectors",
                                               f"class {cls.name}"),
                     compile_all(request.selectors, f"ResourceClaim {claim.key}: {request.path}.selectors",
                                 f"claim {claim.key}"),
                     request.count)

    # -- one node -------------------------------------------------------------------------------------------

    def matching(self, node_name: str, labels: Mapping[str, str]) -> list[list[list[tuple[Request, list[Device]]]]]:
        """Per claim, per request, per option (one, or one per subrequest): the devices of the node's usable
        pools that the class's and the request's selectors accept, in the search's order, free or not. Read
        only (explain shows them); raises AllocationError as ``allocate`` does for a selector that fails."""
        if self.error is not None:
            raise self.error
        search = _Search(self, self.inventory.pools_for(node_name, labels), node_name)
        return [[[(want.request, list(search._candidates(claim, want))) for want in options] for options in per_request]
                for claim, per_request in zip(self.claims, self.wants, strict=True)]

    def allocate(self, node_name: str, labels: Mapping[str, str]) -> list[Allocation] | None:
        if self.error is not None:
            raise self.error
        pools = self.inventory.pools_for(node_name, labels)
        search = _Search(self, pools, node_name)
        return search.run()


class _Search:
    """One Allocate call: the state of the backtracking search on one node."""

    def __init__(self, allocator: Allocator, pools: list[tuple[Pool, list[Slice]]], node_name: str) -> None:
        self.a = allocator
        self.pools = pools
        self.node_name = node_name
        self.taking: dict[tuple[str, str, str], int] = {}  # devices taken in this search -> claims taking them
        self.results: list[list[tuple[str, Device]]] = [[] for _ in allocator.claims]
        self.constraints = [[_Constraint(c) for c in claim.constraints] for claim in allocator.claims]
        self.chosen: dict[tuple[int, int], int] = {}  # (claim, request) -> subrequest index picked
        # per claim, request, option: the devices an All request takes on this node
        self.all_devices: dict[tuple[int, int, int], list[tuple[Device, Pool]]] = {}
        self.candidates: dict[int, list[Device]] = {}  # per want: the devices it accepts on this node

    def run(self) -> list[Allocation] | None:
        a = self.a
        for ci, claim in enumerate(a.claims):
            least = 0
            for ri, options in enumerate(a.wants[ci]):
                counts = []
                for oi, want in enumerate(options):
                    if want.request.all_mode:
                        devices = self._all_devices(claim, want)
                        self.all_devices[(ci, ri, oi)] = devices
                        counts.append(len(devices))
                    else:
                        counts.append(want.count)
                least += min(counts)
            if least > MAX_ALLOCATION_RESULTS:
                raise AllocationError(f"claim {claim.key}: number of requested devices {least} exceeds the claim "
                                      f"limit of {MAX_ALLOCATION_RESULTS}")
        if not self._one(0, 0, 0, 0, False):
            return None
        allocations = []
        for ci, claim in enumerate(a.claims):
            picked = []
            for ri, options in enumerate(a.wants[ci]):
                want = options[self.chosen.get((ci, ri), 0)]
                picked.append((want.request.full_name, want.device_class))
            allocations.append(Allocation(tuple(self.results[ci]), claim, tuple(picked)))
        return allocations

    def _all_devices(self, claim: Claim, want: _Want) -> list[tuple[Device, Pool]]:
        found = []
        for pool, slices in self.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {claim.key}, request {want.request.name}: asks for all devices, but "
                                      f"resource pool {pool} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {claim.key}, request {want.request.name}: asks for all devices, but "
                                      f"resource pool {pool} is currently invalid")
            for s in slices:
                for device in s.devices:
                    if self._selectable(claim, want, device):
                        found.append((device, pool))
        return found

    def _selectable(self, claim: Claim, want: _Want, device: Device) -> bool:
        cache = device.cache
        verdict = cache.get(want.class_key)
        if verdict is None:
            verdict = self._matches(device, want.class_selectors, want.class_key, f"class {want.device_class.name}")
        if not verdict:
            return False
        verdict = cache.get(want.request_key)
        if verdict is None:
            verdict = self._matches(device, want.selectors, want.request_key, f"claim {claim.key}")
        return verdict

    def _candidates(self, claim: Claim, want: _Want) -> list[Device]:
        """The devices of the node's usable pools the want's selectors accept, in the search's order. Kept with
        the inventory for the next pods while no pool is spread by node labels (the node's name then says
        which pools serve it)."""
        found = self.candidates.get(id(want))
        if found is not None:
            return found
        inventory = self.a.inventory
        key = (self.node_name, want.class_key, want.request_key)
        found = None if inventory.spread else inventory.candidates.get(key)
        if found is None:
            found = [device for pool, slices in self.pools if not (pool.incomplete or pool.invalid)
                     for s in slices for device in s.devices if self._selectable(claim, want, device)]
            if not inventory.spread:
                inventory.candidates[key] = found
        self.candidates[id(want)] = found
        return found

    @staticmethod
    def _matches(device: Device, selectors: tuple[DeviceSelector, ...], key: tuple[str, ...], owner: str) -> bool:
        cache = device.cache
        view = cache.get("view")
        if view is None:
            view = cache["view"] = device_view(device.driver, device.raw)
        verdict = True
        for i, selector in enumerate(selectors):
            try:
                ok = selector.matches(view)
            except CelError as err:
                raise AllocationError(f"{owner}: selector #{i} on device {device}: CEL runtime error: "
                                      f"{err.reason}") from None
            if not ok:
                verdict = False
                break
        cache[key] = verdict
        return verdict

    def _one(self, ci: int, ri: int, oi: int, di: int, in_subrequest: bool) -> bool:
        """Allocate device ``di`` of option ``oi`` of request ``ri`` of claim ``ci`` and everything after it."""
        a = self.a
        if ci >= len(a.claims):
            return True
        claim = a.claims[ci]
        if ri >= len(claim.requests):
            return self._one(ci + 1, 0, 0, 0, False)
        options = a.wants[ci][ri]
        if not in_subrequest and claim.requests[ri].exactly is None:
            for index in range(len(options)):
                if self._one(ci, ri, index, 0, True):
                    self.chosen[(ci, ri)] = index
                    return True
            return False
        want = options[oi]
        request = want.request
        all_devices = self.all_devices.get((ci, ri, oi))
        if request.all_mode and not all_devices:
            return False
        count = len(all_devices) if all_devices is not None else want.count
        if di >= count:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + count - di > MAX_ALLOCATION_RESULTS:
            return False
        if all_devices is not None:
            device, _ = all_devices[di]
            if not self._take(ci, request, device, must=True):
                return False
            if self._one(ci, ri, oi, di + 1, in_subrequest):
                return True
            self._give_back(ci, request, device)
            return False
        in_use, taking = a.in_use, self.taking
        for device in self._candidates(claim, want):
            ident = device.id
            if ident in in_use or ident in taking:
                continue
            if not self._take(ci, request, device, must=False):
                continue
            if self._one(ci, ri, oi, di + 1, in_subrequest):
                return True
            self._give_back(ci, request, device)
        return False

    def _take(self, ci: int, request: Request, device: Device, must: bool) -> bool:
        ident = device.id
        if ident in self.a.in_use or ident in self.taking:
            return False
        constraints = self.constraints[ci]
        for i, constraint in enumerate(constraints):
            if not constraint.add(request, device):
                if must:
                    raise AllocationError(f"claim {self.a.claims[ci].key}, request {request.name}: cannot add device "
                                          f"{device} because a claim constraint would not be satisfied")
                for earlier in constraints[:i]:
                    earlier.remove(request)
                return False
        self.taking[ident] = ci
        self.results[ci].append((request.full_name, device))
        return True

    def _give_back(self, ci: int, request: Request, device: Device) -> None:
        for constraint in self.constraints[ci]:
            constraint.remove(request)
        del self.taking[device.id]
        self.results[ci].pop()
