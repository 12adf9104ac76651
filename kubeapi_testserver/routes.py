"""Parse a request path into (resource type, namespace, name, subresource) and its API verb.

URL forms: https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-uris ; verbs as in
authorization (https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb):
GET item=get, GET collection=list, ?watch=true=watch, POST=create, PUT=update, PATCH=patch,
DELETE item=delete, DELETE collection=deletecollection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.kinds import ResourceType, lookup


@dataclass(frozen=True, slots=True)
class Route:
    rtype: ResourceType | None  # None for the legacy /bindings collection
    namespace: str
    name: str | None
    subresource: str | None
    watch_path: bool  # the deprecated /watch/ path prefix

    @property
    def resource_label(self) -> str:
        plural = self.rtype.plural if self.rtype else "bindings"
        return f"{plural}/{self.subresource}" if self.subresource else plural


def not_found_path() -> StatusError:
    return StatusError.for_code(404, "the server could not find the requested resource")


CustomLookup = Callable[[str, str, str], ResourceType | None]


def parse(path: str, custom: CustomLookup | None = None) -> Route:
    """The route of a path; `custom` finds the custom resource types CRDs define (custom_resources.py)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise not_found_path()
    watch_path = bool(rest) and rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise not_found_path()
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if group == "" and plural == "bindings" and namespace and name is None:
        return Route(None, namespace, None, None, watch_path)
    rtype = lookup(group, version, plural)
    if rtype is None and custom is not None:
        rtype = custom(group, version, plural)
    if rtype is None or (sub is not None and sub not in rtype.subresources):
        raise not_found_path()
    if rtype.namespaced and not namespace and name is not None:
        raise not_found_path()
    if not rtype.namespaced and namespace:
        raise not_found_path()
    return Route(rtype, namespace, name, sub, watch_path)


# Query booleans are parsed with Go's strconv.ParseBool (the Python client sends "True").
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def query_bool(query: Mapping[str, str], key: str) -> bool:
    return query.get(key, "") in _TRUE


def int_param(query: Mapping[str, str], key: str) -> int:
    try:
        return int(query.get(key) or 0)
    except ValueError as exc:
        raise StatusError.bad_request(f"invalid {key} parameter: {query.get(key)!r} is not an integer") from exc


def verb_of(method: str, route: Route, watch: bool) -> str:
    if method == "GET":
        if watch or route.watch_path:
            return "watch"
        return "get" if route.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return method.lower()
