"""Read-only views of a running lab cluster through its exported kubeconfig (for `./lab status`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labkit.definition import Lab

REQUEST_TIMEOUT = 5  # seconds: status must answer quickly even when the API server is down


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


def api_client(kubeconfig: Path, context: str | None = None):
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig), context=context)


def nodes(kubeconfig: Path) -> list[NodeRow]:
    from kubernetes import client

    api = client.CoreV1Api(api_client(kubeconfig))
    rows = []
    for node in api.list_node(_request_timeout=REQUEST_TIMEOUT).items:
        conditions = {c.type: c.status for c in node.status.conditions or []}
        labels = node.metadata.labels or {}
        roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
        address = next((a.address for a in node.status.addresses or [] if a.type == "InternalIP"), "")
        rows.append(NodeRow(
            name=node.metadata.name,
            ready="Ready" if conditions.get("Ready") == "True" else "NotReady",
            roles=",".join(roles) or "<none>",
            version=node.status.node_info.kubelet_version if node.status.node_info else "",
            internal_ip=address,
        ))
    return rows


def scheduler(kubeconfig: Path, lab: Lab) -> SchedulerRow | None:
    """The bundled scheduler's Deployment, or None when it has not been deployed."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.AppsV1Api(api_client(kubeconfig))
    try:
        dep = api.read_namespaced_deployment(lab.scheduler.name, lab.scheduler.namespace,
                                             _request_timeout=REQUEST_TIMEOUT)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    ready = f"{dep.status.ready_replicas or 0}/{dep.spec.replicas}"
    return SchedulerRow(ready=ready, image=dep.spec.template.spec.containers[0].image)
