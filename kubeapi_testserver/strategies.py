"""Per-type create/update rules (the registry "strategies" of kubernetes/kubernetes pkg/registry/...).

Only rules a scheduler or a placement runner can observe are kept; each names its source.
"""

from __future__ import annotations

import random
import re
from typing import Any

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import STORAGE_TYPE, ResourceType
from kubeapi_testserver.store import Store

Obj = dict[str, Any]

# k8s.io/apimachinery/pkg/util/validation: DNS-1123 subdomain (most object names).
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# pkg/apis/rbac/validation ValidateRBACName is apimachinery's path.IsValidPathSegmentName: any name but "." and
# "..", without "/" or "%" (the bootstrap ClusterRole system:kube-scheduler is one).
_PATH_SEGMENT_NAMED = frozenset({"clusterroles", "clusterrolebindings", "roles", "rolebindings"})
# k8s.io/apimachinery/pkg/api/resource/quantity.go splitREString
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
# apiserver/pkg/storage/names/generate.go: 5 random chars from this alphabet (no vowels, no
# confusable digits), appended to generateName.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_rng = random.Random()


def _name_problem(rtype: ResourceType, name: str) -> str:
    """What is wrong with this object name for its type ("" when nothing)."""
    if rtype.storage in _PATH_SEGMENT_NAMED:
        if name in (".", ".."):
            return f"may not be '{name}'"
        return next((f"may not contain '{c}'" for c in "/%" if c in name), "")
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character")
    return ""


def generate_name(prefix: str) -> str:
    prefix = prefix[: 63 - 5]
    return prefix + "".join(_rng.choice(_NAME_ALPHABET) for _ in range(5))


def prepare_create(rtype: ResourceType, obj: Obj, namespace: str) -> Obj:
    """System metadata, name generation and type defaults for a create request (POST).

    Names and generateName: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ ;
    uid/creationTimestamp/resourceVersion are set by the server
    (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/).
    """
    meta = dict(obj.get("metadata") or {})
    if meta.get("resourceVersion"):
        # etcd3 store Create: a plain error, surfaced as a 500 by the handler.
        raise StatusError.internal("resourceVersion should not be set on objects to be created")
    if not meta.get("name"):
        if meta.get("generateName"):
            meta["name"] = generate_name(meta["generateName"])
        else:
            raise StatusError.invalid(rtype.kind, "", [("metadata.name", "FieldValueRequired",
                                                     "Required value: name or generateName is required")],
                                   rtype.group)
    name = meta["name"]
    if problem := _name_problem(rtype, name):
        raise StatusError.invalid(rtype.kind, name, [("metadata.name", "FieldValueInvalid",
                                                   f'Invalid value: "{name}": {problem}')], rtype.group)
    if rtype.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise StatusError.bad_request("the namespace of the provided object does not match the namespace "
                                       "sent on the request")
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    # rest.FillObjectMetaSystemFields: the server owns these.
    for system_field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                         "selfLink", "generation"):
        meta.pop(system_field, None)
    if rtype.storage == "pods" or rtype.custom:
        # pods track metadata.generation (PodObservedGenerationTracking); custom resources always do
        meta["generation"] = 1
    if rtype.custom:  # kept at the CRD's storage version
        out = {**obj, "apiVersion": f"{rtype.group}/{rtype.storage_version}", "kind": rtype.kind, "metadata": meta}
        return out
    stored_as = STORAGE_TYPE[rtype.storage]  # events.k8s.io/v1 events are kept as core/v1 ones
    out = {**obj, "apiVersion": stored_as.api_version, "kind": stored_as.kind, "metadata": meta}
    preparer = _CREATE.get(rtype.storage)
    return preparer(out) if preparer else out


def _prepare_pod(pod: Obj) -> Obj:
    spec = dict(pod.get("spec") or {})
    containers = spec.get("containers") or []
    name = pod["metadata"]["name"]
    if not containers:
        raise StatusError.invalid("Pod", name, [("spec.containers", "FieldValueRequired", "Required value")])
    for i, c in enumerate(containers):
        for section in ("requests", "limits"):
            for res, qty in ((c.get("resources") or {}).get(section) or {}).items():
                if not _QUANTITY.match(str(qty)):
                    # Decoding fails before validation: 400 from the JSON decoder.
                    raise StatusError.bad_request(
                        f'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                        f"expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' "
                        f"(spec.containers[{i}].resources.{section}.{res}={qty!r})")
    # Defaults from pkg/apis/core/v1/defaults.go (SetDefaults_PodSpec).
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for field in ("initContainers", "containers"):
        if spec.get(field):
            spec[field] = [_default_container(c) for c in spec[field]]
    # PodStrategy.PrepareForCreate (pkg/registry/core/pod/strategy.go) discards client status.
    status = {"phase": "Pending", "qosClass": _qos_class(containers)}
    return {**pod, "spec": spec, "status": status}


def _default_container(container: Obj) -> Obj:
    """SetDefaults_Container (pkg/apis/core/v1/defaults.go): termination message path and policy; the pull
    policy is Always for a :latest or untagged image, else IfNotPresent."""
    image = container.get("image") or ""
    tag = image.rsplit("/", 1)[-1].partition("@")[0].partition(":")[2]
    pull = "Always" if "@" not in image and tag in ("", "latest") else "IfNotPresent"
    return {"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": pull, **container}


def admit_default_tolerations(pod: Obj) -> Obj:
    """DefaultTolerationSeconds admission plugin: tolerate not-ready/unreachable NoExecute for 300 s
    unless the pod already tolerates them (plugin/pkg/admission/defaulttolerationseconds)."""
    spec = pod.get("spec") or {}
    return {**pod, "spec": {**spec, "tolerations": _default_tolerations(spec.get("tolerations") or [])}}


def _default_tolerations(tolerations: list[Obj]) -> list[Obj]:
    out = list(tolerations)
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        covered = any(t.get("effect", "") in ("", "NoExecute") and
                      (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
                      for t in out)
        if not covered:
            out.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    return out


def _qos_class(containers: list[Obj]) -> str:
    """pkg/apis/core/helper/qos GetPodQOS, reduced to cpu and memory
    (https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/)."""
    requests_seen = limits_all = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_seen = True
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim[name]) != lim[name]:
                guaranteed = False
        limits_all = limits_all or bool(lim)
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_all else "Burstable"


# NodeSystemInfo's fields have no omitempty: a node that never had a kubelet still carries them, empty.
_NODE_INFO_FIELDS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
                     "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture")


def encode_zero_fields(rtype: ResourceType, obj: Obj) -> Obj:
    """Fields the API sends even when nothing set them (Go structs without omitempty), filled after the
    managed fields are recorded, as they are not a writer's fields."""
    return _prepare_node(obj) if rtype.storage == "nodes" else obj


def _prepare_node(node: Obj) -> Obj:
    # The core/v1 NodeStatus as the API encodes it: daemonEndpoints and nodeInfo are structs that are always
    # sent (../shared/reference/kube-apiserver-v1.36.2/node-create.json).
    status = dict(node.get("status") or {})
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    status["nodeInfo"] = {**dict.fromkeys(_NODE_INFO_FIELDS, ""), **(status.get("nodeInfo") or {})}
    if status.get("conditions"):
        status["conditions"] = [{**c, "lastHeartbeatTime": c.get("lastHeartbeatTime"),
                                 "lastTransitionTime": c.get("lastTransitionTime")} for c in status["conditions"]]
    return {**node, "spec": node.get("spec") or {}, "status": status}


def _prepare_namespace(ns: Obj) -> Obj:
    # namespaceStrategy.PrepareForCreate + the kubernetes.io/metadata.name label set by the API server
    # (https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-metadata-name).
    name = ns["metadata"]["name"]
    labels = {**(ns["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": name}
    spec = {"finalizers": ["kubernetes"], **(ns.get("spec") or {})}
    return {**ns, "metadata": {**ns["metadata"], "labels": labels}, "spec": spec,
            "status": {"phase": "Active"}}


def _prepare_storage_object(obj: Obj) -> Obj:
    # PrepareForCreate clears a claim's or PV's status and the v1 defaults (SetDefaults_PersistentVolumeClaim,
    # SetDefaults_PersistentVolume) read it back as phase Pending; the PV controller moves it on (none here).
    return {**obj, "status": {"phase": "Pending"}}


def _prepare_resource_claim(claim: Obj) -> Obj:
    # resourceclaimStrategy.PrepareForCreate (pkg/registry/resource/resourceclaim/strategy.go) drops the
    # client's status: the scheduler allocates through the status subresource.
    return {**claim, "status": {}}


def _prepare_storage_class(sc: Obj) -> Obj:
    # pkg/apis/storage/v1 defaults: reclaimPolicy Delete, volumeBindingMode Immediate.
    return {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", **sc}




def _prepare_priority_class(pc: Obj) -> Obj:
    # SetDefaults_PriorityClass (pkg/apis/scheduling/v1/defaults.go).
    return {"preemptionPolicy": "PreemptLowerPriority", **pc}


def _prepare_pdb(pdb: Obj) -> Obj:
    # podDisruptionBudgetStrategy.PrepareForCreate (pkg/registry/policy/poddisruptionbudget/strategy.go)
    # resets status; the disruption controller fills it (absent here: tests write it).
    return {**pdb, "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}


def _prepare_podgroup(group: Obj) -> Obj:
    # The PodGroup strategy's PrepareForCreate (pkg/registry/scheduling/podgroup/strategy.go) drops the status
    # sent (the scheduler writes it through /status); spec.disruptionMode defaults to Pod, as kube-apiserver
    # 1.36 returned it. Not modelled: the scheduling.k8s.io/podgroup-protection finalizer it adds (no
    # controller here would remove it).
    spec = dict(group.get("spec") or {})
    spec.setdefault("disruptionMode", "Pod")
    return {**group, "spec": spec, "status": {}}


_CREATE = {"pods": _prepare_pod, "namespaces": _prepare_namespace,
           "persistentvolumeclaims": _prepare_storage_object, "persistentvolumes": _prepare_storage_object,
           "storageclasses": _prepare_storage_class, "priorityclasses": _prepare_priority_class,
           "poddisruptionbudgets": _prepare_pdb, "podgroups": _prepare_podgroup,
           "resourceclaims": _prepare_resource_claim}


def admit_priority(store: Store, pod: Obj) -> Obj:
    """The Priority admission plugin at pod creation (plugin/pkg/admission/priority/admission.go):
    spec.priorityClassName resolved to spec.priority and spec.preemptionPolicy (no class: the
    globalDefault class if one exists, else priority 0); an unknown class, or a priority or policy the
    pod states that differs from the class's, is 403 Forbidden with the plugin's message."""
    spec = dict(pod.get("spec") or {})
    name = pod["metadata"]["name"]
    class_name = spec.get("priorityClassName") or ""
    policy = None
    if class_name:
        pc = store.get("priorityclasses", "", class_name)
        if pc is None:
            raise StatusError.forbidden("pods", name, f"no PriorityClass with name {class_name} was found")
    else:
        pc = next((c for c in store.list("priorityclasses", None)[0] if c.get("globalDefault")), None)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    priority = pc.get("value", 0) if pc is not None else 0
    policy = pc.get("preemptionPolicy") if pc is not None else None
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise StatusError.forbidden("pods", name, (
            f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name"))
    spec["priority"] = priority
    if policy is not None:
        if spec.get("preemptionPolicy") not in (None, policy):
            raise StatusError.forbidden("pods", name, (
                f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
                f"spec; priority admission controller computed {policy} from the given PriorityClass name"))
        spec["preemptionPolicy"] = policy
    else:
        # Without a class policy the plugin leaves the default, PreemptLowerPriority (a real answer:
        # ../shared/reference/kube-apiserver-v1.36.2/pod-create.json).
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    return {**pod, "spec": spec}


def validate_events_v1_create(event_v1: Obj) -> None:
    """Strict validation for events created through events.k8s.io/v1
    (pkg/apis/core/validation/events.go ValidateEventCreate)."""
    name = (event_v1.get("metadata") or {}).get("name", "")
    causes = []
    if not event_v1.get("eventTime"):
        causes.append(("eventTime", "FieldValueRequired", "Required value"))
    if event_v1.get("type") not in ("Normal", "Warning"):
        causes.append(("type", "FieldValueInvalid", f'Invalid value: "": has invalid value: {event_v1.get("type")}'))
    for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        if event_v1.get(field):
            causes.append((field, "FieldValueInvalid", "Invalid value: \"\": needs to be unset"))
    for field in ("reportingController", "reportingInstance", "action", "reason"):
        if not event_v1.get(field):
            causes.append((field, "FieldValueRequired", "Required value"))
    if len(event_v1.get("note") or "") > 1024:
        causes.append(("note", "FieldValueTooLong", "Too long: may not be more than 1024 bytes"))
    regarding_ns = (event_v1.get("regarding") or {}).get("namespace")
    event_ns = (event_v1.get("metadata") or {}).get("namespace")
    if regarding_ns and event_ns and regarding_ns != event_ns:
        causes.append(("regarding.namespace", "FieldValueInvalid",
                       f'Invalid value: "{regarding_ns}": does not match event.namespace'))
    if causes:
        raise StatusError.invalid("Event", name, causes, "events.k8s.io")


def prepare_update(rtype: ResourceType, new: Obj, old: Obj, subresource: str | None) -> Obj:
    """Carry server-owned metadata over and apply the main-resource/status split.

    PrepareForUpdate of pods, nodes, namespaces, claims and PVs (pkg/registry/core/*/strategy.go) and
    PodDisruptionBudgets (pkg/registry/policy/poddisruptionbudget/strategy.go), ResourceClaims
    (pkg/registry/resource/resourceclaim/strategy.go), CRDs
    (apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go), and custom resources with a
    status subresource: an update of the main resource keeps the old status; an update through /status keeps
    the old spec.
    """
    meta = dict(new.get("metadata") or {})
    old_meta = old["metadata"]
    for system_field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                         "namespace", "name", "generation"):
        if system_field in old_meta:
            meta[system_field] = old_meta[system_field]
        else:
            meta.pop(system_field, None)
    out = {**new, "apiVersion": old.get("apiVersion"), "kind": old.get("kind"), "metadata": meta}
    if rtype.storage in ("pods", "nodes", "namespaces", "persistentvolumeclaims", "persistentvolumes",
                         "poddisruptionbudgets", "customresourcedefinitions", "podgroups", "resourceclaims"):
        if subresource == "status":
            out["spec"] = old.get("spec")
            if rtype.storage == "pods":
                meta["ownerReferences"] = old_meta.get("ownerReferences")
                if meta["ownerReferences"] is None:
                    del meta["ownerReferences"]
        else:
            if "status" in old:
                out["status"] = old["status"]
            else:
                out.pop("status", None)
    if rtype.custom and "status" in rtype.subresources:
        # apiextensions-apiserver pkg/registry/customresource/strategy.go and status_strategy.go
        if subresource == "status":
            out = {**{k: v for k, v in old.items() if k != "status"}, "metadata": meta,
                   **({"status": new["status"]} if "status" in new else {})}
        else:
            out = {**{k: v for k, v in out.items() if k != "status"}, **({"status": old["status"]} if "status" in old
                                                                           else {})}
    if rtype.custom and "generation" in old_meta:
        # a custom resource's generation counts every change but metadata (and status, with its subresource)
        ignored = ("apiVersion", "kind", "metadata", *(("status",) if "status" in rtype.subresources else ()))
        if {k: v for k, v in out.items() if k not in ignored} != {k: v for k, v in old.items() if k not in ignored}:
            meta["generation"] = old_meta["generation"] + 1
        return out
    # metadata.generation counts changes of the desired state (spec), not of status
    # (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/).
    if out.get("spec") != old.get("spec") and "generation" in old_meta:
        meta["generation"] = old_meta["generation"] + 1
    if rtype.storage == "pods" and subresource is None:
        _validate_pod_spec_update(out, old)
    return encode_zero_fields(rtype, out)


def _validate_pod_spec_update(new: Obj, old: Obj) -> None:
    """ValidatePodUpdate (pkg/apis/core/validation/validation.go): only images, activeDeadlineSeconds,
    added tolerations and a few more may change
    (https://kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if new_spec == old_spec:
        return
    comparable = dict(new_spec)
    for field in ("containers", "initContainers"):
        olds = {c.get("name"): c for c in old_spec.get(field) or []}
        comparable[field] = [{**c, "image": olds[c.get("name")].get("image")} if c.get("name") in olds else c
                             for c in new_spec.get(field) or []]
        if not comparable[field] and field not in old_spec:
            comparable.pop(field)
    for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        if field in old_spec:
            comparable[field] = old_spec[field]
        else:
            comparable.pop(field, None)
    old_tolerations = old_spec.get("tolerations") or []
    if comparable != old_spec or any(t not in (new_spec.get("tolerations") or []) for t in old_tolerations):
        raise StatusError.invalid("Pod", new["metadata"]["name"], [(
            "spec", "FieldValueForbidden",
            ("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
            "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
            "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
            "(allow it to be set to 1 if it was previously negative)"))])


def check_preconditions(rtype: ResourceType, name: str, preconditions: Obj, current: Obj) -> None:
    """metav1.Preconditions (uid, resourceVersion) against the stored object; a mismatch is a 409
    "Precondition failed". DeleteOptions carry them
    (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/), and a
    Binding's metadata.uid/resourceVersion are checked the same way (pod storage assignPod)."""
    meta = current["metadata"]
    for field, what in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        want = preconditions.get(field)
        if want and want != meta.get(field):
            raise StatusError.precondition_failed(rtype.plural, name, what, want, meta.get(field, ""), rtype.group)


def require_namespace(store: Store, namespace: str) -> None:
    """NamespaceLifecycle admission: no new content in a missing or terminating namespace
    (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle)."""
    ns = store.get("namespaces", "", namespace)
    if ns is None:
        raise StatusError.not_found("namespaces", namespace)
    if (ns.get("status") or {}).get("phase") == "Terminating":
        raise StatusError.forbidden("namespaces", namespace,
                                 f"unable to create new content in namespace {namespace} because it is "
                                 "being terminated")
