"""POST pods/{name}/binding: assigning a pod to a node, as the real registry does it."""

from __future__ import annotations

from typing import Any

from kubeapi_testserver import strategies
from kubeapi_testserver.errors import StatusError, success_body
from kubeapi_testserver.kinds import storage_type
from kubeapi_testserver.routes import Route
from kubeapi_testserver.store import Obj, Store, now_rfc3339


def bind_pod(store: Store, route: Route, body: Any) -> Obj:
    """POST pods/{name}/binding (or the legacy namespaces/{ns}/bindings collection).

    Follows BindingREST.Create/assignPod/setPodHostAndAnnotations in kubernetes/kubernetes
    pkg/registry/core/pod/storage/storage.go and the Binding reference
    https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/binding-v1/ :
    metadata.uid / metadata.resourceVersion of the Binding are preconditions on the pod (409);
    a pod already on a node -> 409 on pods/binding "pod X is already assigned to node \"Y\"";
    a missing pod -> 404 pods "X" not found; success sets spec.nodeName, copies the Binding's
    annotations, sets condition PodScheduled=True and answers 201 with a Status{Success}
    (not the pod: that is why the Python client's V1Binding deserialisation complains).
    The node's existence is not checked, as in the real server.
    """
    if not isinstance(body, dict):
        raise StatusError.bad_request("the body of the request is not a Binding object")
    meta = body.get("metadata") or {}
    name = meta.get("name", "")
    if route.name is not None and name != route.name:
        raise StatusError.bad_request("name in URL does not match name in Binding object")
    target = body.get("target") or {}
    errors = []
    if target.get("kind") not in (None, "", "Node"):
        errors.append("target.kind: Invalid value: \"{}\": must be empty or 'Node'".format(target.get("kind")))
    if not target.get("name"):
        errors.append("target.name: Required value")
    if errors:
        # ValidatePodBinding errors are returned as a plain aggregate error -> 500.
        raise StatusError.internal(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    strategies.require_namespace(store, route.namespace)
    pods = storage_type("pods")
    node = target["name"]

    def assign(pod: Obj) -> Obj:
        pmeta, spec = pod["metadata"], pod.get("spec") or {}
        strategies.check_preconditions(pods, name, meta, pod)
        if pmeta.get("deletionTimestamp"):
            raise StatusError.conflict("pods/binding", name,
                                    f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise StatusError.conflict("pods/binding", name,
                                    f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise StatusError.conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
        new_meta = pmeta
        if meta.get("annotations"):
            new_meta = {**pmeta, "annotations": {**(pmeta.get("annotations") or {}), **meta["annotations"]}}
        status = update_pod_condition(pod.get("status") or {}, "PodScheduled", "True")
        return {**pod, "metadata": new_meta, "spec": {**spec, "nodeName": node}, "status": status}

    store.update("pods", route.namespace, name, assign)
    return success_body(201)


def update_pod_condition(status: Obj, cond_type: str, cond_status: str) -> Obj:
    """podutil.UpdatePodCondition: lastTransitionTime changes only when the status does."""
    conditions = list(status.get("conditions") or [])
    now = now_rfc3339()
    new = {"type": cond_type, "status": cond_status, "lastProbeTime": None, "lastTransitionTime": now}
    for i, cond in enumerate(conditions):
        if cond.get("type") == cond_type:
            if cond.get("status") == cond_status:
                new["lastTransitionTime"] = cond.get("lastTransitionTime", now)
            conditions[i] = new
            break
    else:
        conditions.append(new)
    return {**status, "conditions": conditions}
