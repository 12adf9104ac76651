"""What a placement run changes in the cluster, recorded as it happens so it can all be undone: the run's
namespace, node labels (the original value of each, or its absence), node taints and cordons (each node's
original spec.taints and spec.unschedulable), PriorityClasses, the scenarios' objects and the scheduler
Deployment's replicas.

Undo runs on success, failure and Ctrl-C (the runner calls it from `finally`); each step is independent, so
one failing does not stop the others, and each is safe to repeat.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from labkit.kube import Kube, KubeError, pod_path

log = logging.getLogger(__name__)

_MISSING = object()


PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def deployment_path(namespace: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


@dataclass
class Changes:
    kube: Kube
    namespace: str | None = None
    # node -> "labels" or "annotations" -> key -> its value before the run (None: absent)
    metadata: dict[str, dict[str, dict[str, str | None]]] = field(default_factory=dict)
    specs: dict[str, dict[str, object]] = field(default_factory=dict)  # node -> taints/unschedulable -> original
    deployment: tuple[str, str, int] | None = None  # (namespace, name, original replicas)
    priority_classes: list[str] = field(default_factory=list)  # created by the run
    objects: list[tuple[str, str]] = field(default_factory=list)  # a scenario's objects: (API path, kind/name)

    # ------------------------------------------------------------------------ node labels and annotations

    def set_metadata(self, node: str, kind: str, key: str, value: str | None, current: str | None) -> None:
        """Set (or with None remove) a node label or annotation (``kind``), remembering its value before the
        run's first change."""
        originals = self.metadata.setdefault(node, {}).setdefault(kind, {})
        originals.setdefault(key, current)
        if current == value:
            return
        self.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {kind: {key: value}}})

    def set_spec(self, node: str, key: str, value: object, current: object) -> None:
        """Set a node's spec.taints or spec.unschedulable, remembering its value before the run's first change."""
        originals = self.specs.setdefault(node, {})
        originals.setdefault(key, current)
        if current == value:
            return
        self.kube.merge_patch(f"/api/v1/nodes/{node}", {"spec": {key: value}})

    def restore_nodes(self) -> list[str]:
        """Every changed node back to its labels, annotations, taints and cordon before the run; what was
        restored."""
        done = []
        for node in sorted({*self.metadata, *self.specs}):
            metadata, spec = self.metadata.get(node, {}), self.specs.get(node, {})
            patch: dict[str, object] = {}
            if metadata:
                patch["metadata"] = {kind: dict(originals) for kind, originals in metadata.items()}
            if spec:
                patch["spec"] = dict(spec)
            try:
                self.kube.merge_patch(f"/api/v1/nodes/{node}", patch)
            except KubeError as err:
                if not err.not_found:  # a node that left the cluster has nothing to restore
                    raise
            done.extend(f"{node} {k}={v}" if v is not None else f"{node} {k} (unset)"
                        for originals in metadata.values() for k, v in originals.items())
            done.extend(f"{node} {_spec_text(k, v)}" for k, v in spec.items())
        self.metadata.clear()
        self.specs.clear()
        return done

    def node_undo_commands(self) -> list[str]:
        cmds = []
        for node, kinds in self.metadata.items():
            for kind, originals in kinds.items():
                verb = "label" if kind == "labels" else "annotate"
                for key, value in originals.items():
                    cmds.append(f"kubectl {verb} node {node} {key}={value} --overwrite" if value is not None
                                else f"kubectl {verb} node {node} {key}-")
        for node, originals in self.specs.items():
            if "unschedulable" in originals:
                cmds.append(f"kubectl {'cordon' if originals['unschedulable'] else 'uncordon'} {node}")
            if "taints" in originals:
                body = json.dumps({"spec": {"taints": originals["taints"] or None}}, separators=(",", ":"))
                cmds.append(f"kubectl patch node {node} --type merge -p '{body}'")
        return cmds

    # ------------------------------------------------------------------------------ scheduler replicas

    def scale(self, namespace: str, name: str, replicas: int, current: int) -> None:
        if self.deployment is None:
            self.deployment = (namespace, name, current)
        self.kube.merge_patch(deployment_path(namespace, name), {"spec": {"replicas": replicas}})

    def restore_replicas(self) -> str | None:
        if self.deployment is None:
            return None
        namespace, name, replicas = self.deployment
        self.kube.merge_patch(deployment_path(namespace, name), {"spec": {"replicas": replicas}})
        self.deployment = None
        return f"Deployment {namespace}/{name} back to {replicas} replica(s)"

    # -------------------------------------------------------------------------------- priority classes

    def create_priority_class(self, name: str, value: int) -> None:
        self.kube.create(PRIORITY_CLASSES, {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": "kubelab test-placement (deleted at the end of the run)"})
        self.priority_classes.append(name)

    def delete_priority_classes(self) -> str | None:
        """Cluster-scoped, so removed even with --keep (kept pods hold their resolved priority)."""
        deleted = []
        while self.priority_classes:
            name = self.priority_classes.pop()
            try:
                self.kube.delete(f"{PRIORITY_CLASSES}/{name}")
            except KubeError as err:
                if not err.not_found:
                    self.priority_classes.append(name)
                    raise
            deleted.append(name)
        return f"deleted PriorityClass {', '.join(reversed(deleted))}" if deleted else None

    # -------------------------------------------------------------------------------- scenario objects

    def create_object(self, collection: str, obj: dict[str, object], described: str) -> None:
        created = self.kube.create(collection, obj)
        self.objects.append((f"{collection}/{created['metadata']['name']}", described))

    def delete_objects(self) -> str | None:
        """The scenario's objects, last created first (a cluster-scoped one would outlive the namespace)."""
        deleted = []
        while self.objects:
            path, described = self.objects.pop()
            try:
                self.kube.delete(path)
            except KubeError:
                self.objects.append((path, described))
                raise
            deleted.append(described)
        return f"deleted {', '.join(deleted)}" if deleted else None

    def object_undo_commands(self) -> list[str]:
        """--keep: how to delete the last scenario's objects (a cluster-scoped one outlives the namespace)."""
        return [f"kubectl delete --raw {path}" for path, _ in reversed(self.objects) if "/namespaces/" not in path]

    # --------------------------------------------------------------------------------------- namespace

    def delete_pods(self) -> int:
        """Delete the run's pods at once (grace 0): a pod left Pending would be bound when labels return."""
        if self.namespace is None:
            return 0
        pods = self.kube.items(pod_path(self.namespace))
        for pod in pods:
            self.kube.delete(pod_path(self.namespace, pod["metadata"]["name"]), grace_seconds=0)
        return len(pods)

    def delete_namespace(self) -> str | None:
        if self.namespace is None:
            return None
        self.kube.delete(f"/api/v1/namespaces/{self.namespace}")
        name, self.namespace = self.namespace, None
        return name

    def undo(self, keep: bool) -> tuple[list[str], list[str]]:
        """Undo everything (with keep: only the scheduler's replicas). Returns (done, problems)."""
        done: list[str] = []
        problems: list[str] = []
        steps = [("scheduler replicas", self.restore_replicas), ("priority classes", self.delete_priority_classes)]
        if not keep:
            steps += [("test pods", self._pods_step), ("scenario objects", self.delete_objects),
                      ("nodes", self._nodes_step), ("namespace", self._namespace_step)]
        for what, step in steps:
            try:
                line = step()
                if line:
                    done.append(line)
            except KubeError as err:
                problems.append(f"could not restore {what}: {err}")
        return done, problems

    def _pods_step(self) -> str | None:
        count = self.delete_pods()
        return f"deleted {count} test pod(s)" if count else None

    def _nodes_step(self) -> str | None:
        restored = self.restore_nodes()
        return f"restored nodes: {'; '.join(restored)}" if restored else None

    def _namespace_step(self) -> str | None:
        name = self.delete_namespace()
        return f"deleted namespace {name}" if name else None


def _spec_text(key: str, value: object) -> str:
    if key == "unschedulable":
        return "cordoned" if value else "uncordoned"
    return f"taints {json.dumps(value)}" if value else "no taints"
