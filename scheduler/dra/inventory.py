"""What the devices of a cluster are and which are taken: the ResourceSlices grouped into pools (only the
newest generation of a pool counts; a pool missing slices of that generation is incomplete, one naming a
device twice invalid), the DeviceClasses by name, a pod's claims, and the devices all claims' allocations
hold (assumed allocations included: the store's assumed versions are what it reads).

The pools, classes and devices in use are computed from a watched kind's ``ObjectStore`` once per change of
it (``ObjectStore.derived``), not once per pod; the informer may change the store meanwhile (the next read
computes again).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.dra.model import (
    Claim,
    DeviceClass,
    DraError,
    Slice,
    Unsupported,
    allocated_devices,
    parse_claim,
    parse_class,
    parse_slice,
)
from scheduler.framework import ObjectStore

__all__ = ["Inventory", "Pool", "claim_named", "classes_of", "in_use_of", "inventory_of"]


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    slices: list[Slice] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(slots=True, eq=False)
class Inventory:
    """The pools, in the order the allocator tries them (driver, then pool name), split into those bound to
    one node by ``nodeName`` (``local``) and those a node selector or ``allNodes`` spreads (``spread``)."""

    local: dict[str, list[Pool]]
    spread: list[Pool]
    unsupported: tuple[Unsupported, ...]
    errors: tuple[str, ...]  # slices that could not be read
    # (node, class selectors, request selectors) -> the node's devices they accept: the allocator's cache
    candidates: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[tuple[Pool, list[Slice]]]:
        """The pools with a slice serving the node, each with those slices, in the allocator's order."""
        found = [(pool, pool.slices) for pool in self.local.get(node_name, ())]
        for pool in self.spread:
            slices = [s for s in pool.slices if s.serves(node_name, labels)]
            if slices:
                found.append((pool, slices))
        if len(found) > 1:
            found.sort(key=lambda item: (item[0].driver, item[0].name))
        return found


def _build_inventory(store: ObjectStore) -> Inventory:
    pools: dict[tuple[str, str], Pool] = {}
    unsupported: list[Unsupported] = []
    errors: list[str] = []
    for key in sorted(store):
        obj = store.get(key)  # None: removed by the informer since the keys were listed
        if obj is None:
            continue
        try:
            parsed = parse_slice(obj)
        except (DraError, TypeError, ValueError, AttributeError) as err:
            errors.append(f"ResourceSlice {key}: {err}")
            continue
        unsupported += parsed.unsupported
        pool = pools.setdefault((parsed.driver, parsed.pool), Pool(parsed.driver, parsed.pool))
        if pool.slices and parsed.generation < pool.slices[0].generation:
            continue  # outdated
        if pool.slices and parsed.generation > pool.slices[0].generation:
            pool.slices = []
        pool.slices.append(parsed)
    local: dict[str, list[Pool]] = {}
    spread: list[Pool] = []
    for pool in sorted(pools.values(), key=lambda p: (p.driver, p.name)):
        pool.incomplete = len(pool.slices) != pool.slices[0].slice_count
        names = [d.name for s in pool.slices for d in s.devices]
        pool.invalid = len(names) != len(set(names))
        nodes = {s.node_name for s in pool.slices}
        if len(nodes) == 1 and "" not in nodes:
            local.setdefault(next(iter(nodes)), []).append(pool)
        else:
            spread.append(pool)
    return Inventory(local, spread, tuple(unsupported), tuple(errors))


def inventory_of(slices: ObjectStore) -> Inventory:
    return slices.derived("dra/inventory", _build_inventory)


def _build_classes(store: ObjectStore) -> dict[str, DeviceClass | str]:
    found: dict[str, DeviceClass | str] = {}
    for key in store:
        obj = store.get(key)
        if obj is None:
            continue
        try:
            found[key] = parse_class(obj)
        except (DraError, TypeError, ValueError, AttributeError) as err:
            found[key] = f"DeviceClass {key}: {err}"  # unreadable: its error, for the pods naming it
    return found


def classes_of(classes: ObjectStore) -> dict[str, DeviceClass | str]:
    """DeviceClasses by name, or the error that makes one unreadable."""
    return classes.derived("dra/classes", _build_classes)


def claim_named(claims: ObjectStore, namespace: str, name: str) -> Claim | str | None:
    """The claim as the store holds it (an assumed version included), parsed, or the error that makes it
    unreadable; None when there is none. A pod reads its own claims only: parsing them is cheaper than keeping
    every claim parsed while they change with each pod bound."""
    obj = claims.get_object(namespace, name)
    if obj is None:
        return None
    try:
        return parse_claim(obj)
    except (DraError, TypeError, ValueError, AttributeError) as err:
        return f"ResourceClaim {namespace}/{name}: {err}"


def _build_in_use(store: ObjectStore) -> frozenset[tuple[str, str, str]]:
    taken: set[tuple[str, str, str]] = set()
    for key in store:
        obj: Any = store.get(key)
        if obj is None:
            continue
        taken.update(allocated_devices((obj.get("status") or {}).get("allocation")))
    return frozenset(taken)


def in_use_of(claims: ObjectStore) -> frozenset[tuple[str, str, str]]:
    """The (driver, pool, device) ids held by allocated claims, assumed allocations included."""
    return claims.derived("dra/in-use", _build_in_use)
