"""The API operations (get, list, create, update, patch, delete, bind, watch planning) over the Store.

HTTP framing lives in http_handler.py; this module works on parsed routes and JSON values.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from kubeapi_testserver import admission, custom_resources, event_conversion, managed_fields, strategies
from kubeapi_testserver.binding import bind_pod
from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import ResourceType
from kubeapi_testserver.patches import APPLY_PATCH, apply_patch
from kubeapi_testserver.routes import Route, int_param
from kubeapi_testserver.selectors import selector_for
from kubeapi_testserver.store import Obj, Store, now_rfc3339
from kubeapi_testserver.watching import WatchPlan, plan_watch

Query = Mapping[str, str]
# Types whose strategy refuses a PUT without metadata.resourceVersion
# (pkg/registry/coordination/lease/strategy.go: AllowUnconditionalUpdate() false).
NO_UNCONDITIONAL_UPDATE = frozenset({"leases"})


def to_wire(rtype: ResourceType, obj: Obj) -> Obj:
    if rtype.custom:
        return custom_resources.convert(rtype, obj, to_storage=False)
    return event_conversion.from_core(obj) if rtype.group == "events.k8s.io" else obj


def from_wire(rtype: ResourceType, obj: Obj) -> Obj:
    if rtype.custom:
        return custom_resources.convert(rtype, obj, to_storage=True)
    return event_conversion.to_core(obj) if rtype.group == "events.k8s.io" else obj


def _strip_type(obj: Obj) -> Obj:
    """List items are served without kind/apiVersion, as the real server encodes them."""
    return {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}


def _require_url_name(meta: Obj, url_name: str | None) -> None:
    """An update or patch may not rename the object (400, as the real handlers answer)."""
    if meta.get("name") != url_name:
        raise StatusError.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                                   f"({url_name})")


class _DeleteNow(Exception):
    """Raised inside a store update to fall through to an immediate delete."""


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.graceful_pod_deletion = False

    def custom_type(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The custom resource type a CRD serves at this path, if any (custom_resources.py)."""
        return custom_resources.served_type(self.store, group, version, plural)

    # ---- reads -------------------------------------------------------------------------------
    def get(self, route: Route) -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        obj = self.store.get(rtype.storage, route.namespace, route.name)
        if obj is None:
            raise StatusError.not_found(rtype.plural, route.name, rtype.group)
        return to_wire(rtype, obj)

    def list(self, route: Route, query: Query) -> Obj:
        """List the current state, or the state at a past revision like etcd's MVCC reads.

        https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
        (every page of a paged list is read at the first page's revision; a token whose revision
        was compacted is 410 Expired) and #semantics-for-get-and-list (resourceVersionMatch=Exact
        reads at exactly that revision; unset/NotOlderThan read the latest state here, which
        satisfies "not older than").
        """
        rtype = route.rtype
        assert rtype is not None
        selector = selector_for(rtype.fields, query)
        namespace = route.namespace or None
        start_key: list[str] | None = None
        if token := query.get("continue"):
            rv, start_key = self._decode_continue(token)
            items = self._list_at(rtype, namespace, rv, "The provided continue parameter is too old to display "
                                  "a consistent list result. You can start a new list without the continue "
                                  "parameter.")
        elif query.get("resourceVersionMatch") == "Exact":
            rv = int_param(query, "resourceVersion")
            items = self._list_at(rtype, namespace, rv, "The resourceVersion for the provided list is too old.")
        else:
            items, rv = self.store.list(rtype.storage, namespace)
        limit = int_param(query, "limit")
        out: list[Obj] = []
        remaining = 0
        last_key: list[str] | None = None
        for obj in items:
            meta = obj["metadata"]
            key = [meta.get("namespace", ""), meta["name"]]
            if start_key is not None and key <= start_key:
                continue
            if not selector.empty and not selector.matches(obj):
                continue
            if limit and len(out) >= limit:
                remaining += 1
                continue
            out.append(_strip_type(to_wire(rtype, obj)))
            last_key = key
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if remaining and last_key is not None:
            raw = json.dumps({"rv": rv, "start": last_key}).encode()
            metadata["continue"] = base64.urlsafe_b64encode(raw).decode()
            metadata["remainingItemCount"] = remaining
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": metadata, "items": out}

    def _decode_continue(self, token: str) -> tuple[int, list[str]]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            return int(data["rv"]), list(data["start"])
        except (ValueError, KeyError, TypeError) as exc:
            raise StatusError.bad_request(f"continue key is not valid: {exc}") from exc

    def _list_at(self, rtype: ResourceType, namespace: str | None, rv: int, too_old: str) -> list[Obj]:
        items = self.store.list_at(rtype.storage, namespace, rv)
        if items is None:
            raise StatusError.expired(too_old)
        return items

    # ---- writes ------------------------------------------------------------------------------
    def create(self, route: Route, body: Any, manager: str = "unknown") -> Obj:
        """POST: defaults, the creator's managedFields entry, then mutating admission (admission.py)."""
        rtype = route.rtype
        assert rtype is not None
        if not isinstance(body, dict):
            raise StatusError.bad_request(f"the body of the request is not a {rtype.kind} object")
        if rtype.namespaced:
            strategies.require_namespace(self.store, route.namespace)
        if rtype.group == "events.k8s.io":
            meta = {**(body.get("metadata") or {}), "namespace": route.namespace}
            strategies.validate_events_v1_create({**body, "metadata": meta})
        obj = strategies.prepare_create(rtype, from_wire(rtype, body), route.namespace)
        obj = strategies.encode_zero_fields(rtype, managed_fields.on_create(obj, rtype.storage, manager))
        if rtype.storage == "pods":
            obj = strategies.admit_default_tolerations(strategies.admit_priority(self.store, obj))
            obj = admission.admit_service_account(self.store, obj)
        elif rtype.storage == "nodes":
            obj = admission.admit_new_node(obj)
        elif rtype.custom:
            obj = custom_resources.admit(rtype, obj)
        elif rtype.storage == custom_resources.CRD_STORAGE:
            return custom_resources.create_crd(self.store, obj)
        return to_wire(rtype, self.store.create(rtype.storage, obj))

    def update(self, route: Route, body: Any, manager: str = "unknown") -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        if not isinstance(body, dict):
            raise StatusError.bad_request(f"the body of the request is not a {rtype.kind} object")
        body_meta = body.get("metadata") or {}
        _require_url_name(body_meta, route.name)
        new_core = from_wire(rtype, body)
        if not body_meta.get("resourceVersion") and rtype.storage in NO_UNCONDITIONAL_UPDATE:
            # genericregistry.Store.Update when the strategy's AllowUnconditionalUpdate() is false.
            raise StatusError.invalid(rtype.plural, route.name, [(
                "metadata.resourceVersion", "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update")],
                rtype.group)

        def mutate(old: Obj) -> Obj:
            self._check_object_preconditions(rtype, route.name or "", new_core, old)
            new = self._admit_update(rtype, strategies.prepare_update(rtype, new_core, old, route.subresource))
            return managed_fields.on_update(new, old, rtype.storage, manager, route.subresource)

        return to_wire(rtype, self.store.update(rtype.storage, route.namespace, route.name, mutate))

    def _admit_update(self, rtype: ResourceType, new: Obj) -> Obj:
        if rtype.custom:
            return custom_resources.admit(rtype, new)
        if rtype.storage == custom_resources.CRD_STORAGE:
            custom_resources.check_crd(new)
        return new

    def _check_object_preconditions(self, rtype: ResourceType, name: str, new: Obj, old: Obj, *,
                                    patch: bool = False) -> None:
        """resourceVersion in an update/patch body is a precondition (optimistic concurrency,
        https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions and
        api-conventions.md "Concurrency Control and Consistency"). Leader election relies on exactly this
        for Leases (https://kubernetes.io/docs/concepts/architecture/leases/ ,
        https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/lease-v1/): two candidates
        that read the same Lease cannot both write it.

        A metadata.uid differing from the stored object's fails the write, so a write meant for an object
        deleted and re-created under the same name never lands on the new one (kubelet's status patches
        carry the pod's uid for this). The uid "is not allowed to change on PUT operations. Populated by the
        system. Read-only." (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/
        and https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#uids). How a write that
        carries another uid fails depends on the verb, as in kube-apiserver: an update
        (PUT) turns the body's uid into a storage precondition (rest.DefaultUpdatedObjectInfo.Preconditions)
        -> 409 Conflict "Precondition failed: UID in precondition ..."; a patch has no such precondition,
        the patched object keeps the body's uid and rest.BeforeUpdate's metadata validation refuses the
        change (ValidateObjectMetaUpdate: uid is immutable) -> 422 Invalid
        "metadata.uid: Invalid value: ...: field is immutable"."""
        meta, old_meta = new.get("metadata") or {}, old["metadata"]
        rv = meta.get("resourceVersion")
        if rv and rv != old_meta["resourceVersion"]:
            raise StatusError.modified(rtype.plural, name, rtype.group)
        uid = meta.get("uid")
        if uid and uid != old_meta.get("uid"):
            if patch:
                raise StatusError.invalid(rtype.kind, name, [("metadata.uid", "FieldValueInvalid",
                                                           f'Invalid value: "{uid}": field is immutable')],
                                       rtype.group)
            raise StatusError.precondition_failed(rtype.plural, name, "UID", uid, old_meta.get("uid", ""), rtype.group)

    def patch(self, route: Route, content_type: str, patch: Any, manager: str = "unknown") -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None

        def mutate(old: Obj) -> Obj:
            patched = from_wire(rtype, apply_patch(content_type, to_wire(rtype, old), patch))
            _require_url_name(patched.get("metadata") or {}, route.name)
            self._check_object_preconditions(rtype, route.name or "", patched, old, patch=True)
            new = self._admit_update(rtype, strategies.prepare_update(rtype, patched, old, route.subresource))
            return managed_fields.on_update(new, old, rtype.storage, manager, route.subresource)

        return to_wire(rtype, self.store.update(rtype.storage, route.namespace, route.name, mutate))

    def apply(self, route: Route, body: Any, field_manager: str) -> tuple[int, Obj]:
        """Server-side apply (https://kubernetes.io/docs/reference/using-api/server-side-apply/), reduced to
        what a deploy tool observes: fieldManager is required (400 otherwise); a missing object is created
        (201); an existing one gets the applied fields (maps merge, lists replaced, as apply does for atomic
        lists) and keeps its resourceVersion when that changes nothing (200). Not modelled: field ownership
        (conflicts between managers, fields a manager stops applying being removed), managedFields of
        operation Apply."""
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        if not field_manager:
            raise StatusError.bad_request("PATCH requests with apply content type require fieldManager to be set")
        if not isinstance(body, dict):
            raise StatusError.bad_request(f"the body of the request is not a {rtype.kind} object")
        _require_url_name(body.get("metadata") or {}, route.name)
        if self.store.get(rtype.storage, route.namespace, route.name) is None:
            create_route = Route(rtype, route.namespace, None, None, False)
            return 201, self.create(create_route, body, field_manager)
        return 200, self.patch(route, APPLY_PATCH, body, field_manager)

    def delete(self, route: Route, options: Any, query: Query | None = None) -> Obj:
        """Delete with optional DeleteOptions.preconditions (uid, resourceVersion).

        Pods: by default removed at once (stand-in: there is no kubelet to finish a graceful delete).
        With `graceful_pod_deletion` on, a bound, running pod is only marked (deletionTimestamp,
        deletionGracePeriodSeconds) as the real server does (pod strategy CheckGracefulDelete,
        https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination) and stays until
        the test hook finish_pod_deletion() plays the kubelet; unbound pods and gracePeriodSeconds=0
        are removed at once.
        Namespaces: marked Terminating, their content deleted, then removed, all within this call
        (the namespace controller does this asynchronously in a real cluster; "a namespace-scoped
        resource type will be deleted when its namespace is deleted",
        https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-uris).
        """
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        options = options if isinstance(options, dict) else {}
        pre = options.get("preconditions") or {}

        def check(current: Obj) -> None:
            strategies.check_preconditions(rtype, route.name or "", pre, current)

        if rtype.storage == "namespaces":
            return self._delete_namespace(route.name, check)
        if rtype.storage == custom_resources.CRD_STORAGE:
            return custom_resources.delete_crd(self.store, route.name, check)
        if rtype.storage == "pods" and self.graceful_pod_deletion:
            grace = options.get("gracePeriodSeconds")
            if grace is None and query and query.get("gracePeriodSeconds"):
                grace = int_param(query, "gracePeriodSeconds")
            marked = self._mark_pod_terminating(route.namespace, route.name, grace, check)
            if marked is not None:
                return marked
        return to_wire(rtype, self.store.delete(rtype.storage, route.namespace, route.name, check))

    def _mark_pod_terminating(self, namespace: str, name: str, grace: int | None,
                              check: Callable[[Obj], None]) -> Obj | None:
        """Set deletionTimestamp on a bound, running pod; None when it must be deleted at once."""
        def mark(pod: Obj) -> Obj:
            check(pod)
            spec, meta = pod.get("spec") or {}, pod["metadata"]
            period = grace if grace is not None else spec.get("terminationGracePeriodSeconds", 30)
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if not spec.get("nodeName") or finished or period <= 0:
                raise _DeleteNow()
            if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds", period) <= period:
                return pod  # already terminating with an equal or shorter grace period
            return {**pod, "metadata": {**meta, "deletionTimestamp": now_rfc3339(later_seconds=period),
                                        "deletionGracePeriodSeconds": period}}

        try:
            return self.store.update("pods", namespace, name, mark)
        except _DeleteNow:
            return None

    def _delete_namespace(self, name: str, check: Callable[[Obj], None]) -> Obj:
        current = self.store.get("namespaces", "", name)
        if current is None:
            raise StatusError.not_found("namespaces", name)
        check(current)

        def terminate(old: Obj) -> Obj:
            meta = {**old["metadata"], "deletionTimestamp": old["metadata"].get("deletionTimestamp")
                    or now_rfc3339()}
            return {**old, "metadata": meta, "status": {**(old.get("status") or {}), "phase": "Terminating"}}

        terminating = self.store.update("namespaces", "", name, terminate)
        for storage, (ns, obj_name) in self.store.namespaced_keys(name):
            try:
                self.store.delete(storage, ns, obj_name)
            except StatusError:
                pass  # deleted concurrently
        try:
            self.store.delete("namespaces", "", name)
        except StatusError:
            pass
        return terminating

    def delete_collection(self, route: Route, query: Query) -> Obj:
        """DELETE on a collection: every object the label/field selectors match, answered as a list
        (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#delete-collection-of-pod)."""
        rtype = route.rtype
        assert rtype is not None
        selector = selector_for(rtype.fields, query)
        items, _ = self.store.list(rtype.storage, route.namespace or None)
        deleted = []
        for obj in items:
            if selector.empty or selector.matches(obj):
                meta = obj["metadata"]
                try:
                    deleted.append(_strip_type(to_wire(rtype, self.store.delete(
                        rtype.storage, meta.get("namespace", ""), meta["name"]))))
                except StatusError:
                    pass
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)}, "items": deleted}

    # ---- pods/binding and watch: see binding.py and watching.py ------------------------------
    def bind(self, route: Route, body: Any) -> Obj:
        return bind_pod(self.store, route, body)

    def plan_watch(self, route: Route, query: Query) -> WatchPlan:
        return plan_watch(self.store, route, query)
