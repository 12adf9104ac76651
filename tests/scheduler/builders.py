"""Builders for the API dicts the scheduler parses (camelCase, as the API server sends them)."""

from __future__ import annotations

from typing import Any

from scheduler.model import NodeInfo, PodInfo


def pod_obj(
    name: str = "p",
    *,
    namespace: str = "default",
    uid: str | None = None,
    requests: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    overhead: dict[str, Any] | None = None,
    host_ports: list[int] | None = None,
    scheduler_name: str = "my-custom-scheduler",
    spread: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if containers is None:
        container: dict[str, Any] = {"name": "c", "image": "busybox"}
        if requests is not None:
            container["resources"] = {"requests": requests}
        if host_ports:
            container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
        containers = [container]
    spec: dict[str, Any] = {"schedulerName": scheduler_name, "containers": containers}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    if node_name is not None:
        spec["nodeName"] = node_name
    if overhead is not None:
        spec["overhead"] = overhead
    if spread is not None:
        spec["topologySpreadConstraints"] = spread
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def pod(name: str = "p", **kwargs: Any) -> PodInfo:
    return PodInfo.from_api(pod_obj(name, **kwargs))


def node_obj(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    extra: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    conditions: list[dict[str, str]] | None = None,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "20Gi", **(extra or {})}
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": conditions if conditions is not None else [{"type": "Ready", "status": "True"}],
            **({"images": images} if images is not None else {}),
        },
    }


def node(name: str = "n", *, pods_on_it: list[PodInfo] | None = None, **kwargs: Any) -> NodeInfo:
    info = NodeInfo.from_api(node_obj(name, **kwargs))
    for p in pods_on_it or []:
        info.add_pod(p)
    return info


def required_affinity(*terms: list[dict[str, Any]], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """affinity with required node affinity: each argument is one term's matchExpressions."""
    node_terms: list[dict[str, Any]] = [{"matchExpressions": exprs} for exprs in terms]
    if fields is not None:
        node_terms.append({"matchFields": fields})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_terms}}}
