"""Objects of the kinds a plugin declares it reads (``Plugin.watches``): which API resource each names, and the
read-only store the scheduler's informer keeps for it.

A kind is written "group/version/resource" ("scheduling.x-k8s.io/v1alpha1/podgroups"), or "version/resource"
for the core group ("v1/configmaps"), as kube-scheduler plugins name them when they ask the framework's
informer factory for a lister. ``Plugin.writes`` adds an optional subresource ("v1/pods/status").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ObjectStore", "Resource"]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_CORE_VERSION = re.compile(r"^v[0-9]+((alpha|beta)[0-9]+)?$")


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource: group ("" for core), version, plural resource name, optional subresource."""

    group: str
    version: str
    resource: str
    subresource: str = ""

    @classmethod
    def parse(cls, text: str, *, subresource: bool = False) -> Resource:
        """"group/version/resource" or "version/resource" (core); ValueError naming the text and the form."""
        parts = text.split("/") if isinstance(text, str) else []
        if parts and _CORE_VERSION.match(parts[0]):  # the core group has no name: v1/configmaps
            parts = ["", *parts]
        if not (3 <= len(parts) <= (4 if subresource else 3)):
            form = "group/version/resource[/subresource]" if subresource else "group/version/resource"
            raise ValueError(f"{text!r} is not {form} (e.g. 'scheduling.x-k8s.io/v1alpha1/podgroups', "
                             "or 'v1/configmaps' for the core group)")
        group, version, resource, *rest = parts
        if not group and rest and not subresource:
            raise ValueError(f"{text!r} is not version/resource")
        if (group and not _NAME.match(group)) or not _NAME.match(version) or not _NAME.match(resource) or any(
                not _NAME.match(r) for r in rest):
            raise ValueError(f"{text!r}: group, version and resource must be lower-case DNS names")
        return cls(group, version, resource, rest[0] if rest else "")

    def __str__(self) -> str:
        text = f"{self.group}/{self.version}/{self.resource}" if self.group else f"{self.version}/{self.resource}"
        return f"{text}/{self.subresource}" if self.subresource else text

    @property
    def path(self) -> str:
        """The collection's path across namespaces: /api/v1/configmaps, /apis/<group>/<version>/<resource>."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.resource}"

    def object_path(self, namespace: str | None, name: str) -> str:
        """One object's path (namespaced when ``namespace`` is given), with the subresource if any."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if namespace else ""
        tail = f"/{self.subresource}" if self.subresource else ""
        return f"{prefix}{scope}/{self.resource}/{name}{tail}"


class ObjectStore(Mapping[str, Mapping[str, Any]]):
    """The objects of one watched kind as the API server sent them, keyed "namespace/name" (or "name" for a
    cluster-scoped kind). Plugins read it; only the scheduler's informer (or a test) writes it with ``put`` and
    ``remove``. Reads see a whole object or none: the informer replaces objects, never edits them in place.

    A plugin's binding-cycle points may ``assume`` a version of an object ahead of the informer, as
    kube-scheduler's assume cache does for ResourceClaims: reads then see the assumed version until
    ``restore`` drops it or, for one written to the API server (``pending=False``), until the informer delivers
    that resourceVersion or a newer one. ``pending=True`` marks a version not written yet (an allocation held
    between Reserve and PreBind): the informer does not replace it, and ``pending`` tells it apart.
    ``version`` counts the changes readers see; ``derived`` keeps one value computed from the whole store
    (a parsed inventory) until the next change."""

    __slots__ = ("_assumed", "_by_label", "_derived", "_informer", "_lock", "_objects", "resource", "version")

    def __init__(self, resource: Resource | str, objects: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.resource = resource if isinstance(resource, Resource) else Resource.parse(resource)
        self._lock = threading.Lock()
        self._objects: dict[str, Mapping[str, Any]] = dict(objects or {})  # what reads see
        self._informer: dict[str, Mapping[str, Any]] = dict(self._objects)  # what the informer delivered
        self._assumed: dict[str, bool] = {}  # object key -> pending (not written to the API server yet)
        self._derived: dict[str, tuple[int, Any]] = {}
        self.version = 0
        # label key -> (namespace, value) -> {object key: object}: built for a key on its first lookup, then kept
        self._by_label: dict[str, dict[tuple[str, str], dict[str, Mapping[str, Any]]]] = {}

    @staticmethod
    def key_of(obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace")
        return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))

    def get_object(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        """The object ``name`` in ``namespace`` (None or "" for a cluster-scoped kind), or None."""
        return self._objects.get(f"{namespace}/{name}" if namespace else name)

    def in_namespace(self, namespace: str) -> list[Mapping[str, Any]]:
        prefix = f"{namespace}/"
        with self._lock:
            return [obj for key, obj in self._objects.items() if key.startswith(prefix)]

    def labelled(self, namespace: str, key: str, value: str) -> list[Mapping[str, Any]]:
        """The objects of ``namespace`` labelled ``key=value``. The first lookup of a label key indexes every
        object by it; later ones cost the number of objects found."""
        return self._indexed(key, namespace, value)

    def with_field(self, namespace: str, path: str, value: str) -> list[Mapping[str, Any]]:
        """The objects of ``namespace`` whose field ``path`` (dotted, e.g. "spec.schedulingGroup.podGroupName")
        is the string ``value``. Indexed like ``labelled``: the first lookup of a path indexes every object."""
        return self._indexed(f"{_FIELD}{path}", namespace, value)

    def _indexed(self, key: str, namespace: str, value: str) -> list[Mapping[str, Any]]:
        with self._lock:
            index = self._by_label.get(key)
            if index is None:
                index = self._by_label[key] = {}
                for object_key, obj in self._objects.items():
                    _index(index, key, object_key, obj)
            return list(index.get((namespace, value), {}).values())

    def put(self, obj: Mapping[str, Any]) -> None:
        """The informer's version of an object (added or updated)."""
        object_key = self.key_of(obj)
        with self._lock:
            self._informer[object_key] = obj
            pending = self._assumed.get(object_key)
            if pending is None or (not pending and not _older(obj, self._objects.get(object_key))):
                self._assumed.pop(object_key, None)
                self._set(object_key, obj)

    def remove(self, obj: Mapping[str, Any]) -> None:
        """The informer saw the object deleted: gone, assumed version included."""
        object_key = self.key_of(obj)
        with self._lock:
            self._informer.pop(object_key, None)
            self._assumed.pop(object_key, None)
            self._set(object_key, None)

    def assume(self, obj: Mapping[str, Any], *, pending: bool = False) -> None:
        """Reads see ``obj`` ahead of the informer: until ``restore``, or (``pending=False``: the version the
        API server answered a write with) until the informer delivers its resourceVersion or a newer one."""
        object_key = self.key_of(obj)
        with self._lock:
            self._assumed[object_key] = pending
            self._set(object_key, obj)

    def restore(self, namespace: str | None, name: str) -> None:
        """Drop an assumed version: reads see the informer's again (nothing if the object was not assumed)."""
        object_key = f"{namespace}/{name}" if namespace else name
        with self._lock:
            if self._assumed.pop(object_key, None) is not None:
                self._set(object_key, self._informer.get(object_key))

    def pending(self, namespace: str | None, name: str) -> bool:
        """An assumed version not written to the API server yet stands for the object."""
        return bool(self._assumed.get(f"{namespace}/{name}" if namespace else name))

    def derived(self, name: str, compute: Callable[[ObjectStore], Any]) -> Any:
        """``compute(self)``, kept under ``name`` until the store changes (any put, remove, assume or restore)."""
        version = self.version
        kept = self._derived.get(name)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = compute(self)
        self._derived[name] = (version, value)
        return value

    def _set(self, object_key: str, obj: Mapping[str, Any] | None) -> None:
        old = self._objects.get(object_key)
        if obj is None:
            self._objects.pop(object_key, None)
        else:
            self._objects[object_key] = obj
        self.version += 1
        for key, index in self._by_label.items():
            if old is not None:
                _unindex(index, key, object_key, old)
            if obj is not None:
                _index(index, key, object_key, obj)

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        return self._objects[key]

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._objects))

    def __len__(self) -> int:
        return len(self._objects)

    def __repr__(self) -> str:
        return f"ObjectStore({self.resource}, {len(self)} objects)"


_FIELD = "\0field:"  # an index key naming a field path, apart from label keys (no label key holds a NUL)


def _older(obj: Mapping[str, Any], than: Mapping[str, Any] | None) -> bool:
    """``obj``'s resourceVersion is older than ``than``'s (both numbers, as the API server's are; otherwise
    not older)."""
    if than is None:
        return False
    mine = (obj.get("metadata") or {}).get("resourceVersion")
    theirs = (than.get("metadata") or {}).get("resourceVersion")
    try:
        return int(mine) < int(theirs)
    except (TypeError, ValueError):
        return False


def _label_slot(key: str, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    if key.startswith(_FIELD):
        value: Any = obj
        for part in key[len(_FIELD):].split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        value = value if isinstance(value, str) else None
    else:
        value = (meta.get("labels") or {}).get(key)
    return None if value is None else (meta.get("namespace") or "", value)


def _index(index: dict[tuple[str, str], dict[str, Mapping[str, Any]]], key: str, object_key: str,
           obj: Mapping[str, Any]) -> None:
    slot = _label_slot(key, obj)
    if slot is not None:
        index.setdefault(slot, {})[object_key] = obj


def _unindex(index: dict[tuple[str, str], dict[str, Mapping[str, Any]]], key: str, object_key: str,
             obj: Mapping[str, Any]) -> None:
    slot = _label_slot(key, obj)
    if slot is not None and slot in index:
        index[slot].pop(object_key, None)
        if not index[slot]:
            del index[slot]
