"""Server-side apply of the scheduler's objects from the host, as field manager "kubelab": an unchanged
object keeps its resourceVersion, so a re-run with nothing changed changes nothing."""

from __future__ import annotations

from typing import Any

from labkit.console import Echo
from labkit.kube import Kube
from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.manifests import Manifest

FIELD_MANAGER = "kubelab"

# kind -> (API path prefix, plural, namespaced): the kinds templates/scheduler/ renders.
RESOURCES = {
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
}


def object_path(obj: dict[str, Any]) -> str:
    try:
        prefix, plural, namespaced = RESOURCES[obj["kind"]]
    except KeyError:
        raise DeployError(f"no API path known for kind {obj.get('kind')!r}; add it to RESOURCES") from None
    meta = obj["metadata"]
    middle = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{middle}/{plural}/{meta['name']}"


def describe(obj: dict[str, Any]) -> str:
    return f"{obj['kind'].lower()}/{obj['metadata']['name']}"


def apply(kube: Kube, manifests: list[Manifest], echo: Echo = print) -> dict[str, str]:
    """Server-side apply every object; returns describe(obj) -> created / configured / unchanged."""
    return apply_objects(kube, [(obj, object_path(obj)) for manifest in manifests for obj in manifest.objects], echo)


def apply_objects(kube: Kube, objects: list[tuple[dict[str, Any], str]], echo: Echo = print) -> dict[str, str]:
    """Server-side apply each (object, its API path), in order; describe(obj) -> what happened."""
    outcome: dict[str, str] = {}
    for obj, path in objects:
        existing = kube.get_or_none(path)
        before = existing["metadata"]["resourceVersion"] if existing else None
        after = kube.request("PATCH", path, body=obj,  # the client sends it as JSON, which is YAML
                             query={"fieldManager": FIELD_MANAGER, "force": "true"},
                             content_type="application/apply-patch+yaml")
        result = ("created" if before is None else
                  "unchanged" if after["metadata"]["resourceVersion"] == before else "configured")
        outcome[describe(obj)] = result
        echo(f"{describe(obj)} {result}")
    return outcome
