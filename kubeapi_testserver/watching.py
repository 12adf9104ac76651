"""Watch planning and per-watcher event conversion (HTTP streaming lives in http_handler.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import ResourceType
from kubeapi_testserver.routes import Route, query_bool
from kubeapi_testserver.selectors import Selector, selector_for
from kubeapi_testserver.store import Change, Obj, Store

Query = Mapping[str, str]


@dataclass(slots=True)
class WatchPlan:
    rtype: ResourceType
    namespace: str
    selector: Selector
    start_rv: int
    initial: list[Obj]
    initial_events_end: bool  # sendInitialEvents=true: end the initial list with an annotated bookmark
    error: StatusError | None  # sent as an ERROR event (410 Expired) instead of events


def plan_watch(store: Store, route: Route, query: Query) -> WatchPlan:
    """https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
    and #semantics-for-watch: resourceVersion unset or "0" starts with synthetic ADDED events for
    the current state; "N" sends changes after N, or 410 Expired when N is older than history."""
    rtype = route.rtype
    assert rtype is not None
    selector = selector_for(rtype.fields, query, route.name)
    rv_param = query.get("resourceVersion") or ""
    send_initial = query_bool(query, "sendInitialEvents")
    if rv_param not in ("", "0"):
        try:
            start = int(rv_param)
        except ValueError as exc:
            raise StatusError.bad_request(f"invalid resource version: {rv_param}") from exc
        if not send_initial:
            try:
                store.check_watchable(start)
            except StatusError as err:
                return WatchPlan(rtype, route.namespace, selector, start, [], False, err)
            return WatchPlan(rtype, route.namespace, selector, start, [], False, None)
    objs, rv = store.snapshot(rtype.storage)
    initial = [o for o in objs
               if (not route.namespace or o["metadata"].get("namespace") == route.namespace)
               and (selector.empty or selector.matches(o))]
    return WatchPlan(rtype, route.namespace, selector, rv, initial, send_initial, None)


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
