"""Pods, nodes and cluster views for a plugin's unit tests, built from dicts or YAML as the API sends them.

Each builder makes the object a scheduler would receive (camelCase dicts, the way ``kubectl get -o yaml``
prints them), fills what a test leaves out (a uid, a container), and parses it as the scheduler does:
``pod_info`` strictly, as a pod about to be scheduled (a malformed field raises PodSpecError naming it).
The results are the real ``PodInfo`` / ``NodeInfo`` / ``ClusterView``, so ``raw`` reads the object given.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.framework import ClusterView
from scheduler.model import LENIENT, NodeInfo, PodInfo

__all__ = ["Cluster", "cluster_from_objects", "cluster_from_yaml", "cluster_view", "node_info", "node_object", "pod_info", "pod_object"]

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_object(obj: Mapping[str, Any] | str | None = None, /, *, name: str | None = None,
               namespace: str | None = None, labels: Mapping[str, str] | None = None,
               annotations: Mapping[str, str] | None = None, requests: Mapping[str, str] | None = None,
               node_name: str | None = None, spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Pod dict: ``obj`` (a dict or YAML text; copied) or a minimal pod, with the keywords applied on top
    (``labels``/``annotations`` merged, ``requests`` on its first container, ``spec`` merged into spec)."""
    pod = _document(obj, "Pod")
    meta = pod.setdefault("metadata", {})
    meta.setdefault("name", "pod")
    if name is not None:
        meta["name"] = name
    if namespace is not None:
        meta["namespace"] = namespace
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
    _merge(meta, "labels", labels)
    _merge(meta, "annotations", annotations)
    body = pod.setdefault("spec", {})
    body.setdefault("containers", [{"name": "main", "image": PAUSE_IMAGE}])
    if requests is not None:
        body["containers"][0].setdefault("resources", {})["requests"] = dict(requests)
    if node_name is not None:
        body["nodeName"] = node_name
    body.update(copy.deepcopy(dict(spec or {})))
    pod.setdefault("status", {"phase": "Pending"})
    return pod


def pod_info(obj: Mapping[str, Any] | str | None = None, /, **keywords: Any) -> PodInfo:
    """A PodInfo parsed as a pod about to be scheduled (``pod_object``'s arguments)."""
    return PodInfo.from_api(pod_object(obj, **keywords))


def node_object(obj: Mapping[str, Any] | str | None = None, /, *, name: str | None = None,
                labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
                taints: Sequence[Mapping[str, str]] | None = None, allocatable: Mapping[str, str] | None = None,
                unschedulable: bool | None = None) -> dict[str, Any]:
    """A Node dict: ``obj`` (a dict or YAML text; copied) or a minimal Ready node (4 cpu, 8Gi, 110 pods),
    with the keywords applied on top (``labels``/``annotations``/``allocatable`` merged)."""
    node = _document(obj, "Node")
    meta = node.setdefault("metadata", {})
    meta.setdefault("name", "node")
    if name is not None:
        meta["name"] = name
    meta.setdefault("labels", {}).setdefault("kubernetes.io/hostname", meta["name"])
    _merge(meta, "labels", labels)
    _merge(meta, "annotations", annotations)
    spec = node.setdefault("spec", {})
    if taints is not None:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    status = node.setdefault("status", {})
    status.setdefault("allocatable", {"cpu": "4", "memory": "8Gi", "pods": "110"})
    _merge(status, "allocatable", allocatable)
    status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
    return node


def node_info(obj: Mapping[str, Any] | str | None = None, /, *, pods: Iterable[PodInfo | Mapping[str, Any]] = (),
              **keywords: Any) -> NodeInfo:
    """A NodeInfo (``node_object``'s arguments) with ``pods`` counted on it (PodInfos, or Pod dicts parsed
    as the cache parses bound pods)."""
    info = NodeInfo.from_api(node_object(obj, **keywords))
    for pod in pods:
        if not isinstance(pod, PodInfo):
            pod = PodInfo.from_api(pod_object(pod, node_name=info.name), LENIENT)
        info.add_pod(pod)
    return info


def cluster_view(nodes: Iterable[NodeInfo], *,
                 namespaces: Mapping[str, Mapping[str, str]] | None = None) -> ClusterView:
    """The view a plugin that ``reads_cluster`` gets: these nodes and their pods, namespace labels by name."""
    return ClusterView(list(nodes), {name: dict(labels) for name, labels in (namespaces or {}).items()})


@dataclass
class Cluster:
    """What a YAML file of Nodes, Pods and Namespaces holds: the nodes with their bound pods counted on
    them, the pods waiting for a node, and the namespaces' labels."""

    nodes: list[NodeInfo] = field(default_factory=list)
    pending: list[PodInfo] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    def view(self) -> ClusterView:
        return cluster_view(self.nodes, namespaces=self.namespaces)

    def node(self, name: str) -> NodeInfo:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r}; nodes: {', '.join(n.name for n in self.nodes) or 'none'}")

    def pod(self, name: str) -> PodInfo:
        for pod in self.pending:
            if pod.name == name:
                return pod
        raise KeyError(f"no pending pod {name!r}; pending: {', '.join(p.name for p in self.pending) or 'none'}")


def cluster_from_yaml(source: str | Path) -> Cluster:
    """A Cluster from YAML documents (a Path to a file, or the text): kind Node, Pod (with spec.nodeName:
    counted on that node; without: pending) and Namespace; ``kind: List`` items are read too."""
    text = source.read_text() if isinstance(source, Path) else source
    where = str(source) if isinstance(source, Path) else "YAML text"
    objects: list[Any] = []
    for document in yaml.safe_load_all(text):
        if isinstance(document, dict) and document.get("kind") == "List":
            objects.extend(document.get("items") or [])
        elif document is not None:
            objects.append(document)
    return cluster_from_objects(objects, where)


def cluster_from_objects(objects: Iterable[Any], where: str = "objects") -> Cluster:
    """A Cluster from API objects (dicts) of kind Node, Pod (bound: counted on its node; else pending; a
    Succeeded or Failed one: left out) and Namespace, as ``cluster_from_yaml`` reads them; ``where`` names
    their source in errors."""
    cluster = Cluster()
    bound: list[dict[str, Any]] = []
    for i, obj in enumerate(objects):
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind == "Node":
            cluster.nodes.append(node_info(obj))
        elif kind == "Pod":
            pod = pod_object(obj)
            if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
                continue  # it holds no place on a node, and is never scheduled again
            if pod["spec"].get("nodeName"):
                bound.append(pod)
            else:
                cluster.pending.append(PodInfo.from_api(pod))
        elif kind == "Namespace":
            meta = obj.get("metadata") or {}
            cluster.namespaces[str(meta.get("name") or "")] = dict(meta.get("labels") or {})
        else:
            raise ValueError(f"{where}: document {i + 1}: kind {kind!r}; expected Node, Pod, Namespace or List")
    by_name = {node.name: node for node in cluster.nodes}
    for pod in bound:
        node = by_name.get(pod["spec"]["nodeName"]) or cluster.node(pod["spec"]["nodeName"])  # raises naming it
        node.add_pod(PodInfo.from_api(pod, LENIENT))
    return cluster


def _document(obj: Mapping[str, Any] | str | None, kind: str) -> dict[str, Any]:
    if obj is None:
        return {"apiVersion": "v1", "kind": kind}
    if isinstance(obj, str):
        obj = yaml.safe_load(obj)
    if not isinstance(obj, Mapping):
        raise TypeError(f"expected a {kind} as a dict or YAML text, got {type(obj).__name__}")
    if obj.get("kind", kind) != kind:
        raise ValueError(f"expected kind {kind}, got {obj.get('kind')!r}")
    document = copy.deepcopy(dict(obj))
    document.setdefault("apiVersion", "v1")
    document.setdefault("kind", kind)
    return document


def _merge(parent: dict[str, Any], key: str, values: Mapping[str, str] | None) -> None:
    if values is not None:
        parent[key] = {**(parent.get(key) or {}), **values}
