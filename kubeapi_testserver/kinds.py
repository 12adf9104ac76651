"""The resource types this test server serves, with their supported field selectors.

URL layout (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-uris):
/api/v1/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]] for the core group,
/apis/{group}/{version}/... for named groups.

Field selector sets follow each registry's GetAttrs/field label conversions in kubernetes/kubernetes
(pkg/registry/core/pod/strategy.go PodToSelectableFields, pkg/registry/core/node/strategy.go,
pkg/registry/core/event/strategy.go, pkg/apis/events/v1/conversion.go for events.k8s.io) and
https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/#supported-fields .
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeapi_testserver.selectors import path_getter

FieldGetters = Mapping[str, Callable[[Mapping[str, Any]], str]]


_BOOL_FIELDS = frozenset({"spec.unschedulable", "spec.hostNetwork"})


def _getters(*paths: str, renames: Mapping[str, str] | None = None) -> dict[str, Callable[..., str]]:
    out = {p: path_getter(p, "false" if p in _BOOL_FIELDS else "")
           for p in ("metadata.name", "metadata.namespace", *paths)}
    for label, path in (renames or {}).items():
        out[label] = path_getter(path)
    return out


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    storage: str  # objects are kept under this key; events.k8s.io events share core "events"
    fields: FieldGetters
    subresources: frozenset[str] = field(default_factory=frozenset)
    short_names: tuple[str, ...] = ()
    # Custom resources (custom_resources.py): defined by a CRD, stored at its storage version, with its schema.
    custom: bool = False
    storage_version: str = ""
    schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


_EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                 "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", False, "namespaces",
                 _getters("status.phase"), frozenset({"status"}), ("ns",)),
    ResourceType("", "v1", "nodes", "Node", False, "nodes",
                 _getters("spec.unschedulable"), frozenset({"status"}), ("no",)),
    ResourceType("", "v1", "pods", "Pod", True, "pods",
                 _getters("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                          "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                          "status.nominatedNodeName"),
                 frozenset({"status", "binding", "log"}), ("po",)),
    ResourceType("", "v1", "events", "Event", True, "events", _getters(*_EVENT_FIELDS), short_names=("ev",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, "configmaps", _getters(), short_names=("cm",)),
    # Stored only: no PV controller binds claims here (tests bind one by writing what that controller
    # writes: the claim's spec.volumeName, its pv.kubernetes.io/bind-completed annotation, status.phase
    # Bound), and no ephemeral volume controller creates claims. Field selectors as
    # pkg/registry/core/persistentvolumeclaim/strategy.go and persistentvolume/strategy.go ("name" kept there
    # "for backward compatibility").
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "persistentvolumeclaims",
                 _getters(renames={"name": "metadata.name"}), frozenset({"status"}), ("pvc",)),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False, "persistentvolumes",
                 _getters(renames={"name": "metadata.name"}), frozenset({"status"}), ("pv",)),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, "storageclasses", _getters(),
                 short_names=("sc",)),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, "leases", _getters()),
    # Dynamic Resource Allocation (resource.k8s.io/v1), stored and served only: no DRA driver publishes slices
    # and no resourceclaim controller makes claims from templates or frees them (tests write what those
    # would). Field selectors as pkg/registry/resource/resourceslice/strategy.go (spec.nodeName, spec.driver,
    # spec.pool.name). A claim's status (allocation, reservedFor) is written through its status subresource.
    ResourceType("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, "resourceslices",
                 _getters("spec.nodeName", "spec.driver", "spec.pool.name")),
    ResourceType("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, "deviceclasses", _getters()),
    ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, "resourceclaims", _getters(),
                 frozenset({"status"})),
    ResourceType("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True,
                 "resourceclaimtemplates", _getters()),
    # Stored only (no controller makes pods from them); the placement tests drive a stand-in controller.
    ResourceType("apps", "v1", "deployments", "Deployment", True, "deployments", _getters(),
                 frozenset({"status"}), ("deploy",)),
    # Stored only, like deployments (kubeadm's addon phase creates kube-proxy's; no controller here).
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, "daemonsets", _getters(),
                 frozenset({"status"}), ("ds",)),
    # Stored and served only, for deploy-scheduler's objects: no authorizer reads them (every request is
    # allowed), no service account token controller, and a RoleBinding's roleRef is not held immutable.
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccounts", _getters(),
                 short_names=("sa",)),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, "clusterroles",
                 _getters()),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False,
                 "clusterrolebindings", _getters()),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True, "roles", _getters()),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, "rolebindings",
                 _getters()),
    # The kinds a CRD defines are served once it is created (custom_resources.py).
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 "customresourcedefinitions", _getters(), frozenset({"status"}), ("crd", "crds")),
    # Read by the Priority admission plugin at pod creation (strategies.admit_priority).
    ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "priorityclasses",
                 _getters(), short_names=("pc",)),
    # Stored and served only, for explain --what-if's admission (labkit.placement.admission): pods created here
    # get no RuntimeClass overhead and no LimitRange defaults.
    # The Workload API (kube-apiserver 1.36 with --runtime-config=scheduling.k8s.io/v1alpha2=true and the
    # GenericWorkload gate): stored and served; nothing creates PodGroups from a Workload's templates here (no
    # controller-manager), and the PodGroup's status (conditions) is written through /status by the scheduler.
    ResourceType("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True, "workloads", _getters()),
    ResourceType("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True, "podgroups", _getters(),
                 frozenset({"status"})),
    ResourceType("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, "runtimeclasses", _getters()),
    ResourceType("", "v1", "limitranges", "LimitRange", True, "limitranges", _getters(), short_names=("limits",)),
    # No disruption controller here: tests write status.disruptionsAllowed/disruptedPods themselves.
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "poddisruptionbudgets",
                 _getters(), frozenset({"status"}), ("pdb",)),
    # events.k8s.io/v1 is another representation of the same stored events; its field labels
    # (regarding.*, reportingController, ...) are converted to the core ones.
    ResourceType("events.k8s.io", "v1", "events", "Event", True, "events",
                 _getters(*_EVENT_FIELDS, renames={
                     "regarding.kind": "involvedObject.kind",
                     "regarding.namespace": "involvedObject.namespace",
                     "regarding.name": "involvedObject.name",
                     "regarding.uid": "involvedObject.uid",
                     "regarding.apiVersion": "involvedObject.apiVersion",
                     "regarding.resourceVersion": "involvedObject.resourceVersion",
                     "regarding.fieldPath": "involvedObject.fieldPath",
                     "reportingController": "reportingComponent",
                     "deprecatedSource": "source",
                 }), short_names=("ev",)),
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}
# The representation used inside the store and by the test hooks for each storage key: every type
# but events.k8s.io/v1, which is served by converting the stored core/v1 events.
STORAGE_TYPE: dict[str, ResourceType] = {r.storage: r for r in RESOURCES if r.group != "events.k8s.io"}


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_PATH.get((group, version, plural))


def storage_type(storage: str) -> ResourceType:
    return STORAGE_TYPE[storage]


def storage_names(storage: str) -> tuple[str, str]:
    """(plural, group) of a storage key, for error messages: built-in, or a custom resource's <plural>.<group>."""
    if storage in STORAGE_TYPE:
        return STORAGE_TYPE[storage].plural, STORAGE_TYPE[storage].group
    plural, _, group = storage.partition(".")
    return plural, group
