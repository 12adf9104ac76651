"""Custom resources: the kinds the CustomResourceDefinitions created here define, served like the built-in ones.

As kube-apiserver's apiextensions server does
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/):
- a CRD (apiextensions.k8s.io/v1) is checked (metadata.name is <plural>.<group>, scope, one storage version),
  then the apiextensions controller's status is written at once (NamesAccepted and Established True,
  acceptedNames, storedVersions): a watcher sees ADDED, then MODIFIED;
- each served version is served at /apis/<group>/<version>/[namespaces/<ns>/]<plural> with every verb, scoped
  by spec.scope, with /status when the version declares subresources.status (the main resource then keeps
  the old status and /status keeps everything else); all versions share one storage, converted with
  strategy None (only apiVersion changes); metadata.generation starts at 1;
- objects are pruned of fields the version's openAPIV3Schema does not declare (unless
  x-kubernetes-preserve-unknown-fields) and validated against it (422 Invalid naming each field) with
  jsonschema, the project's maintained validator (a dev dependency: without it objects are pruned only).
  Not modelled: CEL rules, defaults, the scale subresource, selectableFields, webhook conversion;
- deleting the CRD deletes every object of it, then the CRD; its kinds are no longer served (open watches end).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import ResourceType, _getters
from kubeapi_testserver.store import Obj, Store

CRD_STORAGE = "customresourcedefinitions"
CRD_GROUP = "apiextensions.k8s.io"

_cache: dict[tuple[str, str, str], ResourceType] = {}  # (CRD uid, resourceVersion, version) -> type


def _crds(store: Store) -> list[Obj]:
    return store.list(CRD_STORAGE)[0]


def _resource_type(crd: Obj, version: Obj) -> ResourceType:
    meta, spec = crd["metadata"], crd["spec"]
    key = (meta.get("uid", ""), meta.get("resourceVersion", ""), version["name"])
    if key not in _cache:
        names = spec["names"]
        storage_version = next((v["name"] for v in spec["versions"] if v.get("storage")), version["name"])
        subresources = frozenset(k for k in (version.get("subresources") or {}) if k == "status")
        _cache[key] = ResourceType(
            spec["group"], version["name"], names["plural"], names["kind"], spec.get("scope") == "Namespaced",
            f'{names["plural"]}.{spec["group"]}', _getters(), subresources, tuple(names.get("shortNames") or ()),
            custom=True, storage_version=storage_version,
            schema=(version.get("schema") or {}).get("openAPIV3Schema"))
    return _cache[key]


def served_type(store: Store, group: str, version: str, plural: str) -> ResourceType | None:
    """The custom resource type served at this group/version/plural, if a CRD defines and serves it."""
    for crd in _crds(store):
        spec = crd.get("spec") or {}
        if spec.get("group") == group and (spec.get("names") or {}).get("plural") == plural:
            for v in spec.get("versions") or []:
                if v.get("name") == version and v.get("served"):
                    return _resource_type(crd, v)
    return None


def storage_version_type(store: Store, storage: str) -> ResourceType | None:
    """The type of a custom resource's storage ("<plural>.<group>") at its storage version."""
    crd = store.get(CRD_STORAGE, "", storage)
    if crd is None:
        return None
    version = next((v for v in crd["spec"]["versions"] if v.get("storage")), None)
    return _resource_type(crd, version) if version else None


def served_types(store: Store) -> Iterable[ResourceType]:
    """Every served version of every CRD (discovery)."""
    for crd in _crds(store):
        for v in (crd.get("spec") or {}).get("versions") or []:
            if v.get("served"):
                yield _resource_type(crd, v)


# ---- the CRD itself ------------------------------------------------------------------------------------


def check_crd(crd: Obj) -> None:
    """The parts of ValidateCustomResourceDefinition (apiextensions-apiserver pkg/apis/apiextensions/validation)
    this server relies on; 422 Invalid naming each field."""
    meta, spec = crd.get("metadata") or {}, crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[tuple[str, str, str]] = []
    for field, value in (("spec.group", spec.get("group")), ("spec.names.plural", names.get("plural")),
                         ("spec.names.kind", names.get("kind"))):
        if not value:
            causes.append((field, "FieldValueRequired", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("spec.scope", "FieldValueNotSupported",
                       f'Unsupported value: "{spec.get("scope") or ""}": supported values: "Cluster", "Namespaced"'))
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("spec.versions", "FieldValueInvalid",
                       "Invalid value: ...: must have exactly one version marked as storage version"))
    if spec.get("group") and names.get("plural") and meta.get("name") != f'{names["plural"]}.{spec["group"]}':
        causes.append(("metadata.name", "FieldValueInvalid",
                       f'Invalid value: "{meta.get("name")}": must be spec.names.plural+"."+spec.group'))
    if causes:
        raise StatusError.invalid("CustomResourceDefinition", meta.get("name", ""), causes, CRD_GROUP)


def establish(store: Store, name: str) -> None:
    """What the apiextensions controllers write once the names are accepted (the CRD is then served)."""
    def mutate(crd: Obj) -> Obj:
        spec = crd["spec"]
        names = {"singular": spec["names"]["kind"].lower(), "listKind": spec["names"]["kind"] + "List",
                 **spec["names"]}
        conditions = [{"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": None}
                      for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                      ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]
        storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
        return {**crd, "spec": {**spec, "names": names},
                "status": {"acceptedNames": names, "conditions": conditions, "storedVersions": [storage]}}
    store.update(CRD_STORAGE, "", name, mutate)


def delete_instances(store: Store, crd_name: str) -> None:
    """The customresourcecleanup finalizer's work: every object of the CRD goes before the CRD."""
    for obj in store.list(crd_name)[0]:
        meta = obj["metadata"]
        try:
            store.delete(crd_name, meta.get("namespace", ""), meta["name"])
        except StatusError:
            pass  # deleted concurrently


# ---- objects of a custom resource ----------------------------------------------------------------------


def convert(rtype: ResourceType, obj: Obj, to_storage: bool) -> Obj:
    """Conversion strategy None: only apiVersion changes between versions."""
    version = rtype.storage_version if to_storage else rtype.version
    api_version = f"{rtype.group}/{version}"
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}


def admit(rtype: ResourceType, obj: Obj) -> Obj:
    """The object pruned to its schema and validated against it (422 Invalid naming each field)."""
    if not rtype.schema:
        return obj
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    pruned = _prune(body, rtype.schema)
    _validate(rtype, obj, pruned)
    return {**{k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}, **pruned}


def _prune(value: Any, schema: Obj) -> Any:
    """Structural pruning: fields the schema does not declare are dropped, unless it preserves unknown fields."""
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        out = {}
        for key, child in value.items():
            if props is not None and key in props:
                out[key] = _prune(child, props[key])
            elif isinstance(extra, dict):
                out[key] = _prune(child, extra)
            elif preserve or extra is True or (props is None and not extra and schema.get("type") != "object"):
                out[key] = child
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_prune(item, schema["items"]) for item in value]
    return value


def _json_schema(schema: Obj) -> Obj:
    """OpenAPI v3 (the structural subset) as JSON Schema with the API server's meaning."""
    def walk(node: Obj) -> Obj:
        node = dict(node)
        for key in ("properties", "patternProperties"):
            if key in node:
                node[key] = {name: walk(child) for name, child in node[key].items()}
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                node[key] = walk(node[key])
        for key in ("allOf", "anyOf", "oneOf"):
            if key in node:
                node[key] = [walk(child) for child in node[key]]
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        for key in [k for k in node if k.startswith("x-kubernetes-")]:
            node.pop(key)
        if node.pop("nullable", False):
            return {"anyOf": [{"type": "null"}, node]}
        return node
    top = copy.deepcopy(schema)
    for key in ("apiVersion", "kind", "metadata"):
        (top.get("properties") or {}).pop(key, None)
    if isinstance(top.get("required"), list):
        top["required"] = [r for r in top["required"] if r not in ("apiVersion", "kind", "metadata")]
    return walk(top)


def _validate(rtype: ResourceType, obj: Obj, body: Obj) -> None:
    try:
        import jsonschema  # a dev dependency: without it objects are pruned, not validated
    except ImportError:
        return
    validator = jsonschema.Draft4Validator(_json_schema(rtype.schema))
    causes = []
    for error in sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path))):
        causes.append(_cause(error))
    if causes:
        raise StatusError.invalid(rtype.kind, (obj.get("metadata") or {}).get("name", ""), causes, rtype.group)


def _field(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else ("null" if value is None else str(value).lower()
                                                        if isinstance(value, bool) else str(value))


def _cause(error: Any) -> tuple[str, str, str]:
    """A jsonschema error in the form kube-openapi's validator reports it (field.Error)."""
    field = _field(error.absolute_path)
    where = field or "<root>"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return (f"{field}.{missing}" if field else missing, "FieldValueRequired", "Required value")
    value = _shown(error.instance) if not isinstance(error.instance, (dict, list)) else "\"object\""
    if error.validator == "type":
        return (where, "FieldValueTypeInvalid",
                f"Invalid value: {value}: {where} in body must be of type {error.validator_value}: {value}")
    if error.validator == "enum":
        allowed = ", ".join(_shown(v) for v in error.validator_value)
        return (where, "FieldValueNotSupported", f"Unsupported value: {value}: supported values: {allowed}")
    if error.validator == "minimum":
        return (where, "FieldValueInvalid",
                f"Invalid value: {value}: {where} in body should be greater than or equal to {error.validator_value}")
    if error.validator == "maximum":
        return (where, "FieldValueInvalid",
                f"Invalid value: {value}: {where} in body should be less than or equal to {error.validator_value}")
    return (where, "FieldValueInvalid", f"Invalid value: {value}: {where} in body {error.message}")


def create_crd(store: Store, crd: Obj) -> Obj:
    """Create a CRD and establish it; the answer is the object as created, before the controller's status."""
    check_crd(crd)
    created = store.create(CRD_STORAGE, crd)
    establish(store, created["metadata"]["name"])
    return created


def delete_crd(store: Store, name: str, check: Callable[[Obj], None] | None = None) -> Obj:
    """Delete a CRD: its objects first (the customresourcecleanup finalizer), then the CRD itself."""
    current = store.get(CRD_STORAGE, "", name)
    if current is None:
        raise StatusError.not_found(CRD_STORAGE, name, CRD_GROUP)
    if check is not None:
        check(current)
    delete_instances(store, name)
    return store.delete(CRD_STORAGE, "", name, check)
