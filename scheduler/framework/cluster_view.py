"""ClusterView: what a scheduling cycle may read beyond the pod and one node."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from scheduler.framework.objects import ObjectStore
from scheduler.model import NodeInfo, NodeTraits, PodInfo
from scheduler.model.pod_index import PodIndex
from scheduler.model.volumes import VolumeStore

__all__ = ["ClusterView"]


class ClusterView:
    """What a scheduling cycle may read beyond the pod and one node: every node with the pods counted on
    it, each namespace's labels, the pods indexed for inter-pod affinity (``index``), and the claims, PVs
    and StorageClasses the informers hold (``volumes``, read live as kube-scheduler's volume plugins read
    their listers), the objects of the kinds plugins ``watch`` (``objects``), and how many of the nodes decided on are cordoned, tainted or list images (``traits``,
    by default counted over ``nodes``, or over ``traits_of`` when the nodes decided on are fewer, on first read:
    a plugin skips its pass over the nodes when none is). A read-only
    view of one snapshot, whose cache keeps the index and the traits current; built from a plain node list
    (tests, the placement explainer), it indexes and counts on first use and knows no volumes."""

    __slots__ = ("_index", "_traits", "_traits_of", "kinds", "namespace_labels", "nodes", "volumes")

    def __init__(self, nodes: Sequence[NodeInfo], namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
                 index: PodIndex | None = None, volumes: VolumeStore | None = None,
                 traits: NodeTraits | None = None, traits_of: Sequence[NodeInfo] | None = None,
                 kinds: Mapping[str, ObjectStore] | None = None) -> None:
        self.nodes = nodes
        self.kinds = kinds if kinds is not None else {}  # "group/version/resource" -> the watched objects
        self.namespace_labels = namespace_labels if namespace_labels is not None else {}
        self._index = index
        self.volumes = volumes if volumes is not None else VolumeStore()
        self._traits = traits
        self._traits_of = traits_of

    @property
    def index(self) -> PodIndex:
        if self._index is None:
            self._index = PodIndex.of(self.nodes, self.namespace_labels)
        return self._index

    @property
    def traits(self) -> NodeTraits:
        if self._traits is None:
            self._traits = NodeTraits.of(self.nodes if self._traits_of is None else self._traits_of)
        return self._traits

    @contextmanager
    def what_if(self, node: NodeInfo) -> Iterator[ClusterView]:
        """The view with ``node`` standing in for the node of its name (a what-if copy: preemption victims
        removed, nominated pods added) while the block runs: the nodes, the traits and the shared pod index
        count ``node``'s pods instead of the original's (kube-scheduler's PreFilterExtensions AddPod and
        RemovePod). The index is put back on leaving, so counts read from it inside hold only there; blocks
        nest. The volume store is shared."""
        original = next((n for n in self.nodes if n.name == node.name), None)
        if original is None:
            raise ValueError(f"what-if node {node.name!r} is not in the view")
        nodes = [node if n is original else n for n in self.nodes]
        traits = self._traits.replacing(original, node) if self._traits is not None else None
        traits_of = None if self._traits_of is None or traits is not None else \
            [node if n is original else n for n in self._traits_of]
        index = self.index
        index.replace_node(original, node)
        try:
            yield ClusterView(nodes, self.namespace_labels, index, self.volumes, traits, traits_of, self.kinds)
        finally:
            index.replace_node(node, original)

    def objects(self, resource: str) -> ObjectStore:
        """The objects of a kind a plugin ``watches`` ("group/version/resource"); KeyError naming it otherwise."""
        store = self.kinds.get(resource)
        if store is None:
            raise KeyError(f"{resource} is not watched by any plugin of this scheduler: declare it in the "
                           f"plugin's watches (watched: {', '.join(self.kinds) or 'none'})")
        return store

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace, _NO_LABELS)

    def pods_labelled(self, namespace: str, key: str, value: str) -> list[PodInfo]:
        """The pods counted on nodes (bound or assumed) in ``namespace`` labelled ``key=value``, from the pod
        index: the cost is the number of such pods, not of every pod."""
        return [pod for _, pod in self.index.with_label(key, value) if pod.namespace == namespace]

    def pods(self) -> Iterator[tuple[Mapping[str, str], PodInfo]]:
        """Every counted pod with its node's labels."""
        for node in self.nodes:
            labels = node.labels
            for pod in node.pods.values():
                yield labels, pod


_NO_LABELS: Mapping[str, str] = {}
