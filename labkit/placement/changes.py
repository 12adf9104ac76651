"""What a placement run changes in the cluster, recorded as it happens so it can all be undone: the run's
namespace, node labels (the original value of each, or its absence) and the scheduler Deployment's replicas.

Undo runs on success, failure and Ctrl-C (the runner calls it from `finally`); each step is independent, so
one failing does not stop the others, and each is safe to repeat.
"""

from __future__ import annotations

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
    labels: dict[str, dict[str, str | None]] = field(default_factory=dict)  # node -> key -> original
    deployment: tuple[str, str, int] | None = None  # (namespace, name, original replicas)
    priority_classes: list[str] = field(default_factory=list)  # created by the run

    # ------------------------------------------------------------------------------------- node labels

    def set_label(self, node: str, key: str, value: str | None, current: str | None) -> None:
        """Set (or with None remove) a node label, remembering its value before the run's first change."""
        originals = self.labels.setdefault(node, {})
        originals.setdefault(key, current)
        if current == value:
            return
        self.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {key: value}}})

    def restore_labels(self) -> list[str]:
        done = []
        for node, originals in self.labels.items():
            try:
                self.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": dict(originals)}})
            except KubeError as err:
                if not err.not_found:  # a node that left the cluster has nothing to restore
                    raise
            done.extend(f"{node} {k}={v}" if v is not None else f"{node} {k} (unset)" for k, v in originals.items())
        self.labels.clear()
        return done

    def label_undo_commands(self) -> list[str]:
        cmds = []
        for node, originals in self.labels.items():
            for key, value in originals.items():
                cmds.append(f"kubectl label node {node} {key}={value} --overwrite" if value is not None
                            else f"kubectl label node {node} {key}-")
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
            steps += [("test pods", self._pods_step), ("node labels", self._labels_step),
                      ("namespace", self._namespace_step)]
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

    def _labels_step(self) -> str | None:
        restored = self.restore_labels()
        return f"restored node labels: {'; '.join(restored)}" if restored else None

    def _namespace_step(self) -> str | None:
        name = self.delete_namespace()
        return f"deleted namespace {name}" if name else None
