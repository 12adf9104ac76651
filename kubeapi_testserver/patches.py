"""PATCH bodies: JSON merge patch, strategic merge patch (subset) and JSON patch.

https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/ describes
the three patch types the API accepts by Content-Type:
- application/merge-patch+json: RFC 7386 (null deletes a key, lists are replaced whole).
- application/strategic-merge-patch+json: like merge patch, but lists with a patch merge key are merged
  element by element (pod status.conditions by "type", containers by "name", ...) and `$patch`
  directives are honoured (community/contributors/devel/sig-api-machinery/strategic-merge-patch.md).
  Stand-in note: the real server reads merge keys from the Go struct tags of each type; here a table by
  field name covers the fields the scheduler and the placement runner patch; other lists are replaced.
- application/json-patch+json: RFC 6902, applied with the `jsonpatch` library.

Every function returns new containers along the patched path and never mutates its inputs: stored
objects are shared with watch history and must stay immutable.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from kubeapi_testserver.errors import StatusError

# patchMergeKey of list fields, from the `patchStrategy:"merge" patchMergeKey:"..."` tags in k8s.io/api.
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "addresses": "type",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
# Lists of scalars with patchStrategy "merge" (set union), e.g. metadata.finalizers.
SET_LISTS = frozenset({"finalizers"})

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON Merge Patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


_DELETE = object()


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    merged = _smp_map(target, patch)
    return {} if merged is _DELETE else merged


def _smp_map(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return _DELETE
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch" or key == "$retainKeys" or key.startswith("$setElementOrder/"):
            continue  # ordering/retain hints: order and extra keys are not significant here
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or [] if x not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(result.get(key), value)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _smp_keyed_list(result.get(key) or [], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in SET_LISTS:
            current = list(result.get(key) or [])
            result[key] = current + [v for v in value if v not in current]
        else:
            result[key] = value
    return result


def _smp_keyed_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    result = list(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            result.append(item)
            continue
        key = item[merge_key]
        index = next((i for i, cur in enumerate(result)
                      if isinstance(cur, dict) and cur.get(merge_key) == key), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            result[index] = _smp_map(result[index], item)
    return result


def json_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, list):
        raise StatusError.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.apply_patch(target, patch, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        # A failed JSON patch (e.g. a "test" op) is answered 422 with the patch library's message
        # (apiserver/pkg/endpoints/handlers/patch.go, NewGenericServerResponse(422, ...)).
        raise StatusError.for_code(422, str(exc)) from exc


APPLY_PATCH = "application/apply-patch+yaml"


def apply_configuration(live: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    """The applied configuration's fields set on the live object: maps merge, everything else (lists
    included) is replaced. Fields an earlier apply set and this one leaves out are kept (no field ownership)."""
    out = dict(live)
    for key, value in applied.items():
        out[key] = apply_configuration(out[key], value) if isinstance(value, dict) and isinstance(
            out.get(key), dict) else value
    return out


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Dispatch on the request's Content-Type (parameters such as charset ignored)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == MERGE_PATCH:
        result = merge_patch(target, patch)
    elif kind == STRATEGIC_PATCH:
        result = strategic_merge_patch(target, patch)
    elif kind == JSON_PATCH:
        result = json_patch(target, patch)
    elif kind == APPLY_PATCH and isinstance(patch, dict):
        # Server-side apply, reduced (see Api.patch): the applied configuration merged onto the live object.
        result = apply_configuration(target, patch)
    else:
        raise StatusError.unsupported_media_type(content_type)
    if not isinstance(result, dict):
        raise StatusError.bad_request("the patch result is not a JSON object")
    return result
