"""A node and the pods the scheduler counts on it (``NodeInfo``): what the plugins read, kept up to date
as pods are added, assumed and removed; ``NodeTraits`` counts what some plugins look for across nodes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.parsing import LENIENT
from scheduler.model.pod import PodInfo
from scheduler.model.raw import EMPTY, ReadOnlyView
from scheduler.model.resources import Resources
from scheduler.model.taints import Taint, condition_taints, parse_node_taints


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
    images: dict[str, int] = field(default_factory=dict)  # every name in status.images -> sizeBytes
    generation: int = 0
    resource_version: str = ""
    # What plugins worked out from this node's state for a kind of pod (plugins.base.per_node_memo): kept
    # on a snapshot's clone, which later decisions share until the node changes; emptied by any change.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    _raw: Mapping[str, Any] | None = field(default=None, repr=False)  # the Node object as read, for ``raw``

    @property
    def raw(self) -> Mapping[str, Any]:
        """The Node object as read, read-only (``scheduler.model.raw``): any field the model does not
        parse, e.g. ``node.raw["metadata"].get("annotations", {}).get("example.com/rack")``."""
        return EMPTY if self._raw is None else ReadOnlyView(self._raw)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> NodeInfo:
        """Build from a core/v1 Node dict (no pods yet)."""
        info = cls(name=str((obj.get("metadata") or {}).get("name") or ""))
        info._load(obj)
        info.generation = 1
        return info

    def update_node(self, obj: Mapping[str, Any]) -> None:
        """Take a new version of the Node object, keeping the pods counted on it."""
        self.memo.clear()
        self._load(obj)
        self.generation += 1

    def _load(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        self._raw = obj
        self.labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.unschedulable = bool(spec.get("unschedulable"))
        # Allocatable is what pods may use; a node object without it (never seen on a kubelet-registered
        # node) falls back to capacity rather than looking full.
        resources = status.get("allocatable") or status.get("capacity") or {}
        self.allocatable = Resources.from_resource_list(resources, f"node {self.name} status.allocatable",
                                                        LENIENT)
        taints = parse_node_taints(spec)
        self.taints = tuple(taints + condition_taints(status.get("conditions") or [], taints))
        self.images = _images(status.get("images"))

    # pods ------------------------------------------------------------------------------------------

    def add_pod(self, pod: PodInfo) -> None:
        """Count a pod on this node; adding a pod with a known uid replaces the old version."""
        if pod.uid in self.pods:
            self.remove_pod(self.pods[pod.uid])
        self.memo.clear()
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
        self.memo.clear()
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
        are copied, the memo starts empty."""
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
            images=self.images,  # replaced, never mutated, by _load
            generation=self.generation,
            resource_version=self.resource_version,
            _raw=self._raw,  # replaced, never mutated, by _load
        )


@dataclass(slots=True)
class NodeTraits:
    """How many of a set of nodes are cordoned, carry a taint, or list images. A plugin whose check reads one
    of these skips its pass over the nodes when no node has it: the verdicts and scores are the same. A
    snapshot keeps its count as nodes change (``count``); a view of other nodes counts them (``of``)."""

    cordoned: int = 0
    tainted: int = 0
    with_images: int = 0

    @classmethod
    def of(cls, nodes: Iterable[NodeInfo]) -> NodeTraits:
        traits = cls()
        for node in nodes:
            traits.count(node, 1)
        return traits

    def count(self, node: NodeInfo, sign: int) -> None:
        """Count ``node`` in (sign 1) or out (sign -1)."""
        self.cordoned += sign * node.unschedulable
        self.tainted += sign * bool(node.taints)
        self.with_images += sign * bool(node.images)

    def replacing(self, old: NodeInfo | None, new: NodeInfo) -> NodeTraits:
        """A copy counting ``new`` in place of ``old`` (None: ``new`` is added)."""
        traits = NodeTraits(self.cordoned, self.tainted, self.with_images)
        if old is not None:
            traits.count(old, -1)
        traits.count(new, 1)
        return traits


def _images(listed: Any) -> dict[str, int]:
    """status.images as {name: sizeBytes}, every name of an image (tag and digest forms) keyed alike. The
    kubelet writes this list, so an entry that does not read is skipped rather than refused."""
    images: dict[str, int] = {}
    for image in listed if isinstance(listed, list) else ():
        if not isinstance(image, dict):
            continue
        size = image.get("sizeBytes")
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else 0
        for name in image.get("names") or ():
            if isinstance(name, str):
                images[name] = size
    return images
