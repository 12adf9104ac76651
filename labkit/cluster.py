"""Read-only views of a running lab cluster through its exported kubeconfig (for `./lab status`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labdef.lab import Lab
from labkit.kube import Kube

ROLE_LABEL = "node-role.kubernetes.io/"


@dataclass(frozen=True)
class NodeRow:
    name: str
    ready: str
    roles: str
    version: str
    internal_ip: str


@dataclass(frozen=True)
class SchedulerRow:
    ready: str
    image: str


def node_row(node: dict) -> NodeRow:
    status = node.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    labels = node["metadata"].get("labels") or {}
    roles = sorted(key.removeprefix(ROLE_LABEL) for key in labels if key.startswith(ROLE_LABEL))
    address = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "")
    return NodeRow(
        name=node["metadata"]["name"],
        ready="Ready" if conditions.get("Ready") == "True" else "NotReady",
        roles=",".join(roles) or "<none>",
        version=(status.get("nodeInfo") or {}).get("kubeletVersion", ""),
        internal_ip=address,
    )


def nodes(kube: Kube) -> list[NodeRow]:
    return [node_row(node) for node in kube.items("/api/v1/nodes")]


def scheduler(kube: Kube, lab: Lab) -> SchedulerRow | None:
    """The bundled scheduler's Deployment, or None when it has not been deployed."""
    settings = lab.scheduler
    dep = kube.get_or_none(f"/apis/apps/v1/namespaces/{settings.namespace}/deployments/{settings.name}")
    if dep is None:
        return None
    ready = f"{(dep.get('status') or {}).get('readyReplicas', 0)}/{dep['spec'].get('replicas', 1)}"
    return SchedulerRow(ready=ready, image=dep["spec"]["template"]["spec"]["containers"][0]["image"])


def summary(kubeconfig: Path, lab: Lab) -> tuple[list[NodeRow], SchedulerRow | None]:
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        return nodes(kube), scheduler(kube, lab)
    finally:
        kube.close()
