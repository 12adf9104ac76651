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
    volumes: list[dict[str, Any]] | None = None,
    extra_spec: dict[str, Any] | None = None,
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
    if volumes is not None:
        spec["volumes"] = volumes
    spec.update(extra_spec or {})
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


# -- storage objects (core/v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1 StorageClass) --
def claim_volume(claim: str, volume: str = "data") -> dict[str, Any]:
    """A pod volume using a PersistentVolumeClaim."""
    return {"name": volume, "persistentVolumeClaim": {"claimName": claim}}


def claim_obj(name: str, *, namespace: str = "default", volume_name: str = "", bound: bool = False,
              storage_class: str | None = None, access_modes: tuple[str, ...] = ("ReadWriteOnce",),
              owner_uid: str | None = None, deleting: bool = False, phase: str | None = None) -> dict[str, Any]:
    """A claim; ``bound`` writes what the PV controller writes on binding (annotation, phase Bound)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if bound:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if owner_uid is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid,
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": "1Gi"}}}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": phase or ("Bound" if bound else "Pending")}}


def pv_obj(name: str, *, node_terms: list[list[dict[str, Any]]] | None = None, labels: dict[str, str] | None = None,
           csi_driver: str | None = None) -> dict[str, Any]:
    """A PV; ``node_terms``: spec.nodeAffinity.required, one matchExpressions list per term."""
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    if node_terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": t} for t in node_terms]}}
    if csi_driver is not None:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["local"] = {"path": f"/mnt/{name}"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}


def storage_class_obj(name: str, binding_mode: str = "Immediate") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": binding_mode}


def on_node(hostname: str) -> list[list[dict[str, Any]]]:
    """PV node affinity to one node by its kubernetes.io/hostname label (as local PVs state it)."""
    return [[{"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}]]
