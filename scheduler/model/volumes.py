"""Pod volumes and the storage objects they name: the claims a pod uses (``spec.volumes[]``
persistentVolumeClaim and generic ephemeral volumes), PersistentVolumeClaims, PersistentVolumes and
StorageClasses as the volume plugins read them, and ``VolumeStore``, the informers' copy of all three.

Facts kept from upstream (kubernetes/kubernetes):
- A generic ephemeral volume's claim is named ``<pod name>-<volume name>`` and must be controlled by the
  pod (component-helpers/storage/ephemeral: VolumeClaimName, VolumeIsForPod).
- A claim is bound once ``spec.volumeName`` is set and the PV controller has annotated it
  ``pv.kubernetes.io/bind-completed`` (volumebinding/binder.go isPVCFullyBound).
- A claim's class is ``spec.storageClassName``, or the older ``volume.beta.kubernetes.io/storage-class``
  annotation, which wins when both are set (component-helpers/storage/volume GetPersistentVolumeClaimClass).
- Binding is delayed (WaitForFirstConsumer) only when the class exists and says so; no class, or a class
  that does not exist, means Immediate (IsDelayBindingMode).
- A PV fits a node when its ``spec.nodeAffinity.required`` terms match the node's labels (CheckNodeAffinity
  builds a Node with labels only, so a ``matchFields`` term on metadata.name never matches).

Pure except ``VolumeStore``, whose writers are the informer threads: each entry is replaced whole by an
immutable value, so a reader (the scheduling loop) needs no lock for one lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.affinity import NodeSelector, parse_node_selector
from scheduler.model.parsing import ParsePolicy, PodSpecError, Unsupported, as_list

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
# The labels VolumeZone compares between a bound PV and a node (volumezone/volume_zone.go topologyLabels).
ZONE_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim one of the pod's volumes uses, by name in the pod's namespace."""

    volume: str  # spec.volumes[].name
    claim: str
    ephemeral: bool  # a generic ephemeral volume: the claim is the ephemeral volume controller's, for this pod


# Inline volume kinds whose limits or conflicts kube-scheduler checks and this scheduler does not.
_INLINE_DISKS = {
    "gcePersistentDisk": "VolumeRestrictions",
    "awsElasticBlockStore": "VolumeRestrictions",
    "rbd": "VolumeRestrictions",
    "iscsi": "VolumeRestrictions",
    "csi": "NodeVolumeLimits",
}
_INLINE_REASONS = {
    "VolumeRestrictions": "this scheduler does not check two pods using one disk on a node for conflicts",
    "NodeVolumeLimits": ("this scheduler does not count CSI volumes against the node's attach limit "
                         "(CSINode allocatable)"),
}


def parse_volumes(spec: Mapping[str, Any], pod_name: str, policy: ParsePolicy,
                  ) -> tuple[tuple[PodClaim, ...], tuple[Unsupported, ...]]:
    """The claims the pod's volumes use, and its inline volumes of kinds this scheduler does not honour."""
    try:
        volumes = as_list(spec.get("volumes"), "spec.volumes")
    except PodSpecError as err:
        policy.unreadable(err)
        return (), ()
    claims: list[PodClaim] = []
    unsupported: list[Unsupported] = []
    for i, volume in enumerate(volumes):
        path = f"spec.volumes[{i}]"
        if not isinstance(volume, dict):
            policy.unreadable(PodSpecError(path, f"expected a volume map, got {volume!r}"))
            continue
        name = str(volume.get("name") or "")
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            claim = source.get("claimName") if isinstance(source, dict) else None
            if not isinstance(claim, str) or not claim:
                policy.unreadable(PodSpecError(f"{path}.persistentVolumeClaim.claimName", "must be a claim name"))
                continue
            claims.append(PodClaim(name, claim, ephemeral=False))
        elif volume.get("ephemeral") is not None:
            claims.append(PodClaim(name, f"{pod_name}-{name}", ephemeral=True))
        for kind, plugin in _INLINE_DISKS.items():
            if volume.get(kind) is not None:
                unsupported.append(Unsupported(f"{path}.{kind}", plugin, _INLINE_REASONS[plugin]))
    return tuple(claims), tuple(unsupported)


@dataclass(frozen=True, slots=True)
class Claim:
    """A PersistentVolumeClaim as the volume plugins read it."""

    namespace: str
    name: str
    volume_name: str  # spec.volumeName ("" when unbound)
    bind_completed: bool
    storage_class: str
    access_modes: frozenset[str]
    lost: bool  # status.phase Lost: its PV is gone
    deleting: bool
    controller_uid: str  # the controlling owner's uid (an ephemeral volume's pod)

    @property
    def bound(self) -> bool:
        return bool(self.volume_name) and self.bind_completed

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Claim:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        annotations = meta.get("annotations") or {}
        controller = next((ref for ref in meta.get("ownerReferences") or []
                           if isinstance(ref, dict) and ref.get("controller")), {})
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            volume_name=str(spec.get("volumeName") or ""),
            bind_completed=BIND_COMPLETED in annotations,
            storage_class=str(annotations[BETA_STORAGE_CLASS] if BETA_STORAGE_CLASS in annotations
                              else spec.get("storageClassName") or ""),
            access_modes=frozenset(str(m) for m in spec.get("accessModes") or ()),
            lost=(obj.get("status") or {}).get("phase") == "Lost",
            deleting=bool(meta.get("deletionTimestamp")),
            controller_uid=str(controller.get("uid") or ""),
        )


@dataclass(frozen=True, slots=True)
class Volume:
    """A PersistentVolume: where it can be used (node affinity, zone labels) and what backs it."""

    name: str
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required (None: any node)
    labels: Mapping[str, str]
    csi_driver: str  # spec.csi.driver ("" for other kinds)

    def fits(self, labels: Mapping[str, str]) -> bool:
        """CheckNodeAffinity: the node's labels match one of the required terms (node name unknown)."""
        return self.node_affinity is None or self.node_affinity.matches("", labels)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Volume:
        """A node affinity that cannot be read matches no node, as CheckNodeAffinity's error counts as a
        conflict (the API server's validation keeps such PVs out anyway)."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        required = (spec.get("nodeAffinity") or {}).get("required")
        try:
            affinity = None if required is None else parse_node_selector(required, "spec.nodeAffinity.required")
        except PodSpecError:
            affinity = NodeSelector(())
        return cls(
            name=str(meta.get("name") or ""),
            node_affinity=affinity,
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            csi_driver=str((spec.get("csi") or {}).get("driver") or ""),
        )


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    delayed: bool  # volumeBindingMode WaitForFirstConsumer

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> StorageClass:
        return cls(str((obj.get("metadata") or {}).get("name") or ""),
                   obj.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER)


class VolumeStore:
    """Claims (by namespace/name), PVs and StorageClasses (by name), as the informers last saw them.
    VolumeBinding reads them live, not from the cycle's snapshot, as kube-scheduler's plugin reads its
    listers."""

    def __init__(self) -> None:
        self.claims: dict[str, Claim] = {}
        self.volumes: dict[str, Volume] = {}
        self.classes: dict[str, StorageClass] = {}

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> VolumeStore:
        """A store of whole API objects (claims, PVs and StorageClasses, told apart by ``kind``; others are
        ignored). Items of a List carry no kind: feed those through the cache handlers instead, as the
        placement explainer does."""
        store = cls()
        for obj in objects:
            kind = obj.get("kind")
            if kind == "PersistentVolumeClaim":
                store.set_claim(Claim.from_api(obj))
            elif kind == "PersistentVolume":
                store.set_volume(Volume.from_api(obj))
            elif kind == "StorageClass":
                store.set_class(StorageClass.from_api(obj))
        return store

    def claim(self, namespace: str, name: str) -> Claim | None:
        return self.claims.get(f"{namespace}/{name}")

    def bound_volume(self, namespace: str, claim_name: str) -> Volume | None:
        """The PV a claim is bound to; None for a claim that is missing, unbound, or bound to a missing PV."""
        claim = self.claim(namespace, claim_name)
        return self.volumes.get(claim.volume_name) if claim is not None and claim.bound else None

    def set_claim(self, claim: Claim) -> None:
        self.claims[f"{claim.namespace}/{claim.name}"] = claim

    def remove_claim(self, namespace: str, name: str) -> None:
        self.claims.pop(f"{namespace}/{name}", None)

    def set_volume(self, volume: Volume) -> None:
        self.volumes[volume.name] = volume

    def remove_volume(self, name: str) -> None:
        self.volumes.pop(name, None)

    def set_class(self, storage_class: StorageClass) -> None:
        self.classes[storage_class.name] = storage_class

    def remove_class(self, name: str) -> None:
        self.classes.pop(name, None)

    def delayed_binding(self, claim: Claim) -> bool:
        """IsDelayBindingMode: the claim's class exists and is WaitForFirstConsumer."""
        storage_class = self.classes.get(claim.storage_class) if claim.storage_class else None
        return storage_class is not None and storage_class.delayed
