"""The API operations (get, list, create, update, patch, delete, bind, watch planning) over the Store.

HTTP framing lives in http_handler.py; this module works on parsed routes and JSON values.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.kubeapi import event_conversion, strategies
from tests.kubeapi.errors import ApiError, success_body
from tests.kubeapi.kinds import ResourceType, storage_type
from tests.kubeapi.patches import apply_patch
from tests.kubeapi.routes import Route, query_bool
from tests.kubeapi.selectors import Selector, parse_field_selector, parse_label_selector
from tests.kubeapi.store import Change, Obj, Store, now_rfc3339

Query = Mapping[str, str]
# Types whose strategy refuses a PUT without metadata.resourceVersion
# (pkg/registry/coordination/lease/strategy.go: AllowUnconditionalUpdate() false).
NO_UNCONDITIONAL_UPDATE = frozenset({"leases"})


def to_wire(rtype: ResourceType, obj: Obj) -> Obj:
    return event_conversion.from_core(obj) if rtype.group == "events.k8s.io" else obj


def from_wire(rtype: ResourceType, obj: Obj) -> Obj:
    return event_conversion.to_core(obj) if rtype.group == "events.k8s.io" else obj


def _precondition_failed(rtype: ResourceType, name: str, what: str, want: str, have: str) -> ApiError:
    # storage.NewInvalidObjError from checkPreconditions, turned into a Conflict by InterpretUpdateError.
    return ApiError.conflict(rtype.plural, name,
                             f"Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}",
                             rtype.group)


def selector_for(rtype: ResourceType, query: Query, name: str | None = None) -> Selector:
    fields = parse_field_selector(query.get("fieldSelector"), rtype.fields)
    if name is not None:
        fields = fields + parse_field_selector(f"metadata.name={name}", rtype.fields)
    return Selector(parse_label_selector(query.get("labelSelector")), fields, rtype.fields)


def int_param(query: Query, key: str) -> int:
    try:
        return int(query.get(key) or 0)
    except ValueError as exc:
        raise ApiError.bad_request(f"invalid {key} parameter: {query.get(key)!r} is not an integer") from exc


def _strip_type(obj: Obj) -> Obj:
    """List items are served without kind/apiVersion, as the real server encodes them."""
    return {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}


@dataclass(slots=True)
class WatchPlan:
    rtype: ResourceType
    namespace: str
    selector: Selector
    start_rv: int
    initial: list[Obj]
    initial_events_end: bool  # sendInitialEvents=true: end the initial list with an annotated bookmark
    error: ApiError | None  # sent as an ERROR event (410 Expired) instead of events


class _DeleteNow(Exception):
    """Raised inside a store update to fall through to an immediate delete."""


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.graceful_pod_deletion = False

    # ---- reads -------------------------------------------------------------------------------
    def get(self, route: Route) -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        obj = self.store.get(rtype.storage, route.namespace, route.name)
        if obj is None:
            raise ApiError.not_found(rtype.plural, route.name, rtype.group)
        return to_wire(rtype, obj)

    def list(self, route: Route, query: Query) -> Obj:
        """https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks

        Stand-in note: continue pages are cut from the current state (not an MVCC snapshot at the
        first page's revision); the token still carries that revision and expires (410) once it
        is compacted, as the real token does.
        """
        rtype = route.rtype
        assert rtype is not None
        selector = selector_for(rtype, query)
        items, rv = self.store.list(rtype.storage, route.namespace or None)
        start_key: list[str] | None = None
        if token := query.get("continue"):
            rv, start_key = self._decode_continue(token)
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
            rv, start = int(data["rv"]), list(data["start"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ApiError.bad_request(f"continue key is not valid: {exc}") from exc
        if rv < self.store.compacted_rv:
            raise ApiError.expired("The provided continue parameter is too old to display a consistent list "
                                   "result. You can start a new list without the continue parameter.")
        return rv, start

    # ---- writes ------------------------------------------------------------------------------
    def _require_namespace(self, namespace: str) -> None:
        """NamespaceLifecycle admission: no new content in a missing or terminating namespace."""
        ns = self.store.get("namespaces", "", namespace)
        if ns is None:
            raise ApiError.not_found("namespaces", namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            raise ApiError.forbidden("namespaces", namespace,
                                     f"unable to create new content in namespace {namespace} because it is "
                                     "being terminated")

    def create(self, route: Route, body: Any) -> Obj:
        rtype = route.rtype
        assert rtype is not None
        if not isinstance(body, dict):
            raise ApiError.bad_request(f"the body of the request is not a {rtype.kind} object")
        if rtype.namespaced:
            self._require_namespace(route.namespace)
        if rtype.group == "events.k8s.io":
            meta = {**(body.get("metadata") or {}), "namespace": route.namespace}
            strategies.validate_events_v1_create({**body, "metadata": meta})
        obj = strategies.prepare_create(rtype, from_wire(rtype, body), route.namespace)
        obj = {**obj, "apiVersion": storage_type(rtype.storage).api_version}
        return to_wire(rtype, self.store.create(rtype.storage, obj))

    def update(self, route: Route, body: Any) -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        if not isinstance(body, dict):
            raise ApiError.bad_request(f"the body of the request is not a {rtype.kind} object")
        body_name = (body.get("metadata") or {}).get("name")
        if body_name != route.name:
            raise ApiError.bad_request(f"the name of the object ({body_name}) does not match the name on the URL "
                                       f"({route.name})")
        new_core = from_wire(rtype, body)
        if not (body.get("metadata") or {}).get("resourceVersion") and rtype.storage in NO_UNCONDITIONAL_UPDATE:
            # genericregistry.Store.Update when the strategy's AllowUnconditionalUpdate() is false.
            raise ApiError.invalid(rtype.plural, route.name, [(
                "metadata.resourceVersion", "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update")],
                rtype.group)

        def mutate(old: Obj) -> Obj:
            self._check_object_preconditions(rtype, route.name or "", new_core, old)
            return strategies.prepare_update(rtype, new_core, old, route.subresource)

        return to_wire(rtype, self.store.update(rtype.storage, route.namespace, route.name, mutate))

    def _check_object_preconditions(self, rtype: ResourceType, name: str, new: Obj, old: Obj) -> None:
        """resourceVersion in an update/patch body is a precondition (optimistic concurrency,
        https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions and
        api-conventions.md "Concurrency Control and Consistency"); a differing uid is a
        failed precondition too. Leader election relies on exactly this for Leases
        (https://kubernetes.io/docs/concepts/architecture/leases/ ,
        https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/lease-v1/): two candidates
        that read the same Lease cannot both write it."""
        meta, old_meta = new.get("metadata") or {}, old["metadata"]
        rv = meta.get("resourceVersion")
        if rv and rv != old_meta["resourceVersion"]:
            raise ApiError.modified(rtype.plural, name, rtype.group)
        uid = meta.get("uid")
        if uid and uid != old_meta.get("uid"):
            raise _precondition_failed(rtype, name, "UID", uid, old_meta.get("uid", ""))

    def patch(self, route: Route, content_type: str, patch: Any) -> Obj:
        rtype = route.rtype
        assert rtype is not None and route.name is not None

        def mutate(old: Obj) -> Obj:
            patched = from_wire(rtype, apply_patch(content_type, to_wire(rtype, old), patch))
            meta = patched.get("metadata") or {}
            if meta.get("name") != route.name:
                raise ApiError.bad_request(f"the name of the object ({meta.get('name')}) does not match the name "
                                           f"on the URL ({route.name})")
            self._check_object_preconditions(rtype, route.name or "", patched, old)
            return strategies.prepare_update(rtype, patched, old, route.subresource)

        return to_wire(rtype, self.store.update(rtype.storage, route.namespace, route.name, mutate))

    def delete(self, route: Route, options: Any, query: Query | None = None) -> Obj:
        """Delete with optional DeleteOptions.preconditions (uid, resourceVersion).

        Pods: by default removed at once (stand-in: there is no kubelet to finish a graceful delete).
        With `graceful_pod_deletion` on, a bound, running pod is only marked (deletionTimestamp,
        deletionGracePeriodSeconds) as the real server does (pod strategy CheckGracefulDelete,
        https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination) and stays until
        the test hook finish_pod_deletion() plays the kubelet; unbound pods and gracePeriodSeconds=0
        are removed at once.
        Namespaces: marked Terminating, their content deleted, then removed, all within this call
        (the namespace controller does this asynchronously in a real cluster).
        """
        rtype = route.rtype
        assert rtype is not None and route.name is not None
        options = options if isinstance(options, dict) else {}
        pre = options.get("preconditions") or {}

        def check(current: Obj) -> None:
            meta = current["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise _precondition_failed(rtype, route.name or "", "UID", pre["uid"], meta.get("uid", ""))
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise _precondition_failed(rtype, route.name or "", "ResourceVersion", pre["resourceVersion"],
                                           meta.get("resourceVersion", ""))

        if rtype.storage == "namespaces":
            return self._delete_namespace(route.name, check)
        if rtype.storage == "pods" and self.graceful_pod_deletion:
            grace = options.get("gracePeriodSeconds")
            if grace is None and query and query.get("gracePeriodSeconds"):
                grace = int_param(query, "gracePeriodSeconds")
            marked = self._mark_pod_terminating(route.namespace, route.name, grace, check)
            if marked is not None:
                return marked
        return to_wire(rtype, self.store.delete(rtype.storage, route.namespace, route.name, check))

    def _mark_pod_terminating(self, namespace: str, name: str, grace: int | None, check: Any) -> Obj | None:
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
            when = datetime.now(UTC) + timedelta(seconds=period)
            return {**pod, "metadata": {**meta, "deletionTimestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                        "deletionGracePeriodSeconds": period}}

        try:
            return self.store.update("pods", namespace, name, mark)
        except _DeleteNow:
            return None

    def _delete_namespace(self, name: str, check: Any) -> Obj:
        current = self.store.get("namespaces", "", name)
        if current is None:
            raise ApiError.not_found("namespaces", name)
        check(current)

        def terminate(old: Obj) -> Obj:
            meta = {**old["metadata"], "deletionTimestamp": old["metadata"].get("deletionTimestamp")
                    or now_rfc3339()}
            return {**old, "metadata": meta, "status": {**(old.get("status") or {}), "phase": "Terminating"}}

        terminating = self.store.update("namespaces", "", name, terminate)
        for storage, (ns, obj_name) in self.store.namespaced_keys(name):
            try:
                self.store.delete(storage, ns, obj_name)
            except ApiError:
                pass  # deleted concurrently
        try:
            self.store.delete("namespaces", "", name)
        except ApiError:
            pass
        return terminating

    def delete_collection(self, route: Route, query: Query) -> Obj:
        rtype = route.rtype
        assert rtype is not None
        selector = selector_for(rtype, query)
        items, _ = self.store.list(rtype.storage, route.namespace or None)
        deleted = []
        for obj in items:
            if selector.empty or selector.matches(obj):
                meta = obj["metadata"]
                try:
                    deleted.append(_strip_type(to_wire(rtype, self.store.delete(
                        rtype.storage, meta.get("namespace", ""), meta["name"]))))
                except ApiError:
                    pass
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)}, "items": deleted}

    # ---- pods/binding ------------------------------------------------------------------------
    def bind(self, route: Route, body: Any) -> Obj:
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
            raise ApiError.bad_request("the body of the request is not a Binding object")
        meta = body.get("metadata") or {}
        name = meta.get("name", "")
        if route.name is not None and name != route.name:
            raise ApiError.bad_request("name in URL does not match name in Binding object")
        target = body.get("target") or {}
        errors = []
        if target.get("kind") not in (None, "", "Node"):
            errors.append("target.kind: Invalid value: \"{}\": must be empty or 'Node'".format(target.get("kind")))
        if not target.get("name"):
            errors.append("target.name: Required value")
        if errors:
            # ValidatePodBinding errors are returned as a plain aggregate error -> 500.
            raise ApiError.internal(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        self._require_namespace(route.namespace)
        pods = storage_type("pods")
        node = target["name"]

        def assign(pod: Obj) -> Obj:
            pmeta, spec = pod["metadata"], pod.get("spec") or {}
            if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
                raise _precondition_failed(pods, name, "UID", meta["uid"], pmeta.get("uid", ""))
            if meta.get("resourceVersion") and meta["resourceVersion"] != pmeta.get("resourceVersion"):
                raise _precondition_failed(pods, name, "ResourceVersion", meta["resourceVersion"],
                                           pmeta.get("resourceVersion", ""))
            if pmeta.get("deletionTimestamp"):
                raise ApiError.conflict("pods/binding", name,
                                        f"pod {name} is being deleted, cannot be assigned to a host")
            if spec.get("nodeName"):
                raise ApiError.conflict("pods/binding", name,
                                        f'pod {name} is already assigned to node "{spec["nodeName"]}"')
            if spec.get("schedulingGates"):
                raise ApiError.conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
            new_meta = pmeta
            if meta.get("annotations"):
                new_meta = {**pmeta, "annotations": {**(pmeta.get("annotations") or {}), **meta["annotations"]}}
            status = update_pod_condition(pod.get("status") or {}, "PodScheduled", "True")
            return {**pod, "metadata": new_meta, "spec": {**spec, "nodeName": node}, "status": status}

        self.store.update("pods", route.namespace, name, assign)
        return success_body(201)

    # ---- watch -------------------------------------------------------------------------------
    def plan_watch(self, route: Route, query: Query) -> WatchPlan:
        """https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
        and #semantics-for-watch: resourceVersion unset or "0" starts with synthetic ADDED events for
        the current state; "N" sends changes after N, or 410 Expired when N is older than history."""
        rtype = route.rtype
        assert rtype is not None
        selector = selector_for(rtype, query, route.name)
        rv_param = query.get("resourceVersion") or ""
        send_initial = query_bool(query, "sendInitialEvents")
        if rv_param not in ("", "0"):
            try:
                start = int(rv_param)
            except ValueError as exc:
                raise ApiError.bad_request(f"invalid resource version: {rv_param}") from exc
            if not send_initial:
                try:
                    self.store.check_watchable(start)
                except ApiError as err:
                    return WatchPlan(rtype, route.namespace, selector, start, [], False, err)
                return WatchPlan(rtype, route.namespace, selector, start, [], False, None)
        objs, rv = self.store.snapshot(rtype.storage)
        initial = [o for o in objs
                   if (not route.namespace or o["metadata"].get("namespace") == route.namespace)
                   and (selector.empty or selector.matches(o))]
        return WatchPlan(rtype, route.namespace, selector, rv, initial, send_initial, None)


def update_pod_condition(status: Obj, cond_type: str, cond_status: str, reason: str | None = None,
                         message: str | None = None) -> Obj:
    """podutil.UpdatePodCondition: lastTransitionTime changes only when the status does."""
    conditions = list(status.get("conditions") or [])
    now = now_rfc3339()
    new = {"type": cond_type, "status": cond_status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for i, cond in enumerate(conditions):
        if cond.get("type") == cond_type:
            if cond.get("status") == cond_status:
                new["lastTransitionTime"] = cond.get("lastTransitionTime", now)
            conditions[i] = new
            break
    else:
        conditions.append(new)
    return {**status, "conditions": conditions}


def watch_event(plan: WatchPlan, change: Change) -> tuple[str, Obj] | None:
    """The event a watcher with this plan sees for one change, if any.

    Selector transitions follow the watch cache (k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go
    convertToWatchEvent): old matched and new does not -> DELETED carrying the previous object with the
    change's resourceVersion; new matches and old did not -> ADDED.
    """
    if change.storage != plan.rtype.storage:
        return None
    if plan.namespace and change.obj["metadata"].get("namespace") != plan.namespace:
        return None
    sel = plan.selector
    if sel.empty:
        return change.type, change.obj
    if change.type == "DELETED":
        return ("DELETED", change.obj) if sel.matches(change.obj) else None
    now_ok = sel.matches(change.obj)
    was_ok = change.prev is not None and sel.matches(change.prev)
    if now_ok:
        return ("MODIFIED" if was_ok else "ADDED"), change.obj
    if was_ok and change.prev is not None:
        prev = change.prev
        return "DELETED", {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(change.rv)}}
    return None
