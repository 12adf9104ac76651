"""The DRA devices the placement page shows on a node: for each device a node's pools offer (the scheduler's
own reading of the ResourceSlices, scheduler.dra.inventory: the newest generation of each pool, node-local
and node-selected slices alike), its driver, pool, name, a few attributes, and the claim whose allocation
holds it with the pods the claim is reserved for. Fed the ResourceSlices and ResourceClaims the page watches
(state.py); read only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labkit.placement.explain_devices import holders
from scheduler.dra.inventory import inventory_of
from scheduler.framework import ObjectStore
from scheduler.plugins.dynamic_resources import CLAIMS, SLICES

ATTRIBUTES_SHOWN = 3  # per device, in the order the driver writes them


def _value(attribute: Any) -> str:
    if isinstance(attribute, Mapping):
        for kind in ("string", "int", "bool", "version"):
            if kind in attribute:
                return str(attribute[kind]).lower() if kind == "bool" else str(attribute[kind])
    return str(attribute)


class Devices:
    """The watched ResourceSlices and ResourceClaims, and what they put on each node."""

    def __init__(self) -> None:
        self.slices = ObjectStore(SLICES)
        self.claims = ObjectStore(CLAIMS)

    @property
    def any(self) -> bool:
        return len(self.slices) > 0

    def on_node(self, name: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        """The node's devices in the scheduler's order (driver, pool, slice, device), each with the claim
        holding it ("" when free) and the pods that claim is reserved for."""
        if not len(self.slices):
            return []
        inventory = inventory_of(self.slices)
        held = self.claims.derived("ui/holders", holders)  # once per change of the claims, not per node
        found = []
        for pool, slices in inventory.pools_for(name, labels):
            for s in slices:
                for device in s.devices:
                    claim = held.get(device.id, "")
                    found.append({"driver": device.driver, "pool": device.pool, "name": device.name,
                                  "attributes": {k: _value(v) for k, v in list(device.attributes.items())
                                                 [:ATTRIBUTES_SHOWN]},
                                  "claim": claim, "pods": self._reserved_for(claim) if claim else []})
        return found

    def _reserved_for(self, claim_key: str) -> list[str]:
        namespace, _, name = claim_key.partition("/")
        obj = self.claims.get_object(namespace, name) or {}
        return [f"{namespace}/{r.get('name', '')}" for r in (obj.get("status") or {}).get("reservedFor") or []
                if isinstance(r, Mapping) and r.get("resource") == "pods"]
