"""Mutating admission that acts on a scheduler's objects at create time, on API requests only (the test hooks
store objects as given, like a write straight to etcd).

- ServiceAccount (plugin/pkg/admission/serviceaccount/admission.go): a pod without spec.serviceAccountName
  runs as "default" (spec.serviceAccount mirrors it); unless the pod or its ServiceAccount sets
  automountServiceAccountToken false, it gets the projected `kube-api-access-<5 random chars>` volume
  (a bound token of 3607 s, the namespace's kube-root-ca.crt, the namespace from the downward API) mounted
  read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container. A real kube-apiserver
  v1.36.2 answer is in ../shared/reference/kube-apiserver-v1.36.2/pod-create.json (that build adds an
  OpenShift-only fourth source, left out here as upstream does).
- TaintNodesByCondition (plugin/pkg/admission/nodetaint): a new node gets node.kubernetes.io/not-ready:NoSchedule;
  the node lifecycle controller lifts it once the node is Ready (here a client lifts it, as a benchmark does).
"""

from __future__ import annotations

from kubeapi_testserver.store import Obj, Store
from kubeapi_testserver.strategies import generate_name

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _token_volume(name: str) -> Obj:
    return {"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": 420}}


def admit_service_account(store: Store, pod: Obj) -> Obj:
    spec = dict(pod.get("spec") or {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account
    sa = store.get("serviceaccounts", pod["metadata"]["namespace"], account) or {}
    automount = spec.get("automountServiceAccountToken", sa.get("automountServiceAccountToken", True))
    mounted = any(m.get("mountPath") == TOKEN_MOUNT_PATH
                  for c in spec.get("containers") or [] for m in c.get("volumeMounts") or [])
    if automount is False or mounted:
        return {**pod, "spec": spec}
    volume = generate_name("kube-api-access-")
    spec["volumes"] = [*(spec.get("volumes") or []), _token_volume(volume)]
    mount = {"name": volume, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    for field in ("initContainers", "containers"):
        if spec.get(field):
            spec[field] = [{**c, "volumeMounts": [*(c.get("volumeMounts") or []), mount]} for c in spec[field]]
    return {**pod, "spec": spec}


def admit_new_node(node: Obj) -> Obj:
    spec = dict(node.get("spec") or {})
    taints = list(spec.get("taints") or [])
    if not any(t.get("key") == NOT_READY_TAINT["key"] and t.get("effect") == "NoSchedule" for t in taints):
        spec["taints"] = [*taints, dict(NOT_READY_TAINT)]
    return {**node, "spec": spec}
