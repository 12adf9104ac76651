"""metadata.managedFields as kube-apiserver writes them for Update operations (create, PUT, PATCH).

Every write through the API records which fields its manager set: one entry per (manager, operation,
subresource) with a FieldsV1 set (https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management).
The manager is the client's User-Agent up to the first "/" (k8s.io/apiserver handlers/fieldmanager). What is
kept here, checked against ../shared/reference/kube-apiserver-v1.36.2/ (a real server's answers):
- a create records the fields of the object after defaulting and before mutating admission (a pod's entry has
  its defaulted dnsPolicy but not the service-account volume or the default tolerations; a node's has its
  labels but not the not-ready taint);
- an update or patch adds the fields it changed to its manager's entry for that subresource (a node status
  patch is an entry of its own with "subresource": "status"); fields it removed leave every entry, and an
  entry left empty is dropped;
- server-owned metadata (name, uid, resourceVersion, ...) and a pod's status on the main resource are not
  recorded; a binding writes no entry (the registry sets spec.nodeName directly).
Lists whose items merge by a key are keyed ("k:{\"name\":\"c\"}"); other lists are atomic (one leaf).
A nested map or list that is recorded as a whole carries "." (the top-level fields and a pod's required
containers list do not, as the real answers show).
"""

from __future__ import annotations

import json
from typing import Any

from kubeapi_testserver.store import Obj, now_rfc3339

Fields = dict[str, Any]

# Merge keys of the keyed lists a scheduler's objects carry (the patchMergeKey of the core/v1 types).
_LIST_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
              "volumeMounts": "mountPath", "env": "name", "conditions": "type", "addresses": "type",
              "imagePullSecrets": "name", "resourceClaims": "name"}
_NO_SELF = frozenset({"containers"})  # required lists: recorded without "."
# Structs marked +structType=atomic: recorded as one leaf (an Event's object references).
_ATOMIC = frozenset({"involvedObject", "regarding", "related"})
_METADATA_RECORDED = ("labels", "annotations", "ownerReferences", "finalizers")


def manager_of(user_agent: str | None) -> str:
    """The manager name the API server derives from a User-Agent (its part before the first "/")."""
    return (user_agent or "unknown").split("/", 1)[0] or "unknown"


def _scope(obj: Obj, storage: str, subresource: str | None) -> Obj:
    """The part of an object a write through this endpoint owns fields in."""
    if subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if storage == "pods":
        out.pop("status", None)  # the pod strategy resets status on the main resource
    meta = obj.get("metadata") or {}
    recorded = {k: meta[k] for k in _METADATA_RECORDED if meta.get(k)}
    if recorded:
        out = {"metadata": recorded, **out}
    return out


def _key(item: Any, field: str) -> str | None:
    name = _LIST_KEYS.get(field)
    if name is None or not isinstance(item, dict) or name not in item:
        return None
    return "k:" + json.dumps({name: item[name]}, separators=(",", ":"))


def _whole(value: Any, field: str, depth: int) -> Fields:
    """The field set of a value recorded as a whole."""
    if isinstance(value, dict) and value and field not in _ATOMIC:
        out: Fields = {} if depth <= 1 else {".": {}}
        for k, v in value.items():
            if depth == 0 and v == {}:
                continue  # an empty top-level struct (spec: {}) is not recorded
            out[f"f:{k}"] = _whole(v, k, depth + 1)
        return out
    if isinstance(value, list) and value and all(_key(i, field) for i in value):
        out = {} if field in _NO_SELF or depth <= 1 else {".": {}}
        for item in value:
            out[_key(item, field)] = _whole(item, "", depth + 1)
        return out
    return {}


def _changed(old: Any, new: Any, field: str, depth: int) -> Fields | None:
    """Field set of what differs from old to new (None: nothing changed or only removals)."""
    if old == new or new is None:
        return None
    if isinstance(old, dict) and isinstance(new, dict) and field not in _ATOMIC:
        out: Fields = {}
        for k, v in new.items():
            sub = _changed(old.get(k), v, k, depth + 1) if k in old else _whole(v, k, depth + 1)
            if sub is not None:
                out[f"f:{k}"] = sub
        return out or None
    if isinstance(old, list) and isinstance(new, list) and all(_key(i, field) for i in old + new):
        before = {_key(i, field): i for i in old}
        out = {}
        for item in new:
            key = _key(item, field)
            sub = _changed(before[key], item, "", depth + 1) if key in before else _whole(item, "", depth + 1)
            if sub is not None:
                out[key] = sub
        return out or None
    return _whole(new, field, depth)


def _removed(old: Any, new: Any, field: str) -> list[list[str]]:
    """Paths (as field-set keys) present in old and gone from new."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [] if new is not None and new == old else [[]]
        out = []
        for k, v in old.items():
            if k not in new or new[k] is None:
                if v is not None:
                    out.append([f"f:{k}"])
            else:
                out += [[f"f:{k}", *p] for p in _removed(v, new[k], k) if p]
        return out
    if isinstance(old, list) and isinstance(new, list) and all(_key(i, field) for i in old + new):
        now = {_key(i, field): i for i in new}
        out = []
        for item in old:
            key = _key(item, field)
            if key not in now:
                out.append([key])
            else:
                out += [[key, *p] for p in _removed(item, now[key], "") if p]
        return out
    return []


def _merge(into: Fields, more: Fields) -> Fields:
    out = dict(into)
    for k, v in more.items():
        out[k] = _merge(out[k], v) if k in out and v else out.get(k, v)
    return out


def _without(fields: Fields, path: list[str]) -> Fields:
    if not path or path[0] not in fields:
        return fields
    out = dict(fields)
    if len(path) == 1:
        del out[path[0]]
    else:
        rest = _without(out[path[0]], path[1:])
        if rest and set(rest) != {"."}:
            out[path[0]] = rest
        else:
            del out[path[0]]
    return out


def _entry(manager: str, api_version: str, fields: Fields, subresource: str | None) -> Obj:
    entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now_rfc3339(),
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def on_create(obj: Obj, storage: str, manager: str) -> Obj:
    """The object with its creator's managedFields entry (call after defaulting, before admission)."""
    fields = _whole(_scope(obj, storage, None), "", 0)
    entries = [_entry(manager, obj.get("apiVersion", "v1"), fields, None)] if fields else []
    return {**obj, "metadata": {**obj["metadata"], "managedFields": entries}}


def on_update(new: Obj, old: Obj, storage: str, manager: str, subresource: str | None) -> Obj:
    """`new` with managedFields carried over from `old` and this write's changes recorded."""
    before, after = _scope(old, storage, subresource), _scope(new, storage, subresource)
    changed = _changed(before, after, "", 0) or {}
    gone = _removed(before, after, "")
    old_meta, meta = old.get("metadata") or {}, dict(new.get("metadata") or {})
    if not changed and not gone:  # a write that changes nothing stays unwritten: keep the entries as they were
        if "managedFields" in old_meta:
            meta["managedFields"] = old_meta["managedFields"]
        else:
            meta.pop("managedFields", None)
        return {**new, "metadata": meta}
    entries = []
    mine = None
    for entry in old_meta.get("managedFields") or []:
        fields = entry.get("fieldsV1") or {}
        for path in gone:
            fields = _without(fields, path)
        if (entry.get("manager"), entry.get("operation"), entry.get("subresource")) == (manager, "Update",
                                                                                          subresource):
            mine = len(entries)
            fields = _merge(fields, changed)
            entry = {**entry, "time": now_rfc3339()}
        if fields:
            entries.append({**entry, "fieldsV1": fields})
        elif mine == len(entries):
            mine = None
    if mine is None and changed:
        entries.append(_entry(manager, new.get("apiVersion", "v1"), changed, subresource))
    meta["managedFields"] = entries
    return {**new, "metadata": meta}
