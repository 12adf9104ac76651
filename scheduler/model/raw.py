"""The object as read: a read-only view of a pod's or a node's API dict, and field paths into it.

``PodInfo.raw`` and ``NodeInfo.raw`` let a plugin read any field the model does not parse (an annotation,
``spec.runtimeClassName``, a node's ``status.nodeInfo``). The view wraps the dict the watch delivered, and
wraps a nested dict or list only when it is read: building one costs an object of one slot, nothing is
copied, and the scheduler's own state cannot be changed through it.

A field path names one field of such an object, as a plugin declares the fields whose change may make a
pod it rejected schedulable: dotted names (``spec.tolerations``, ``metadata.labels``), and a map key in
brackets when it holds dots or slashes (``metadata.annotations['example.com/zone']``). ``FieldPath.read``
returns ``MISSING`` when the field is absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["EMPTY", "MISSING", "POD_NOT_KEPT", "FieldPath", "NotKept", "ReadOnlyList", "ReadOnlyView", "read_only"]


def read_only(value: Any) -> Any:
    """``value`` as a plugin may see it: a dict or list wrapped read-only, anything else as it is (the
    scalars JSON holds are immutable)."""
    if isinstance(value, dict):
        return ReadOnlyView(value)
    if isinstance(value, list):
        return ReadOnlyList(value)
    return value


class ReadOnlyView(Mapping[str, Any]):
    """A read-only Mapping over an API dict; nested dicts and lists come out wrapped alike."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return read_only(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._data.get(key, default)
        return value if value is default else read_only(value)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadOnlyView):
            return self._data == other._data
        return isinstance(other, Mapping) and self._data == dict(other)

    __hash__ = None  # type: ignore[assignment]  # a view of mutable data, as a dict

    def __repr__(self) -> str:
        return f"ReadOnlyView({self._data!r})"

    def to_dict(self) -> dict[str, Any]:
        """A deep copy the caller owns (to change, or to hand to code that wants a dict)."""
        return _copy(self._data)


class ReadOnlyList(Sequence[Any]):
    """A read-only Sequence over an API list; nested dicts and lists come out wrapped alike."""

    __slots__ = ("_data",)

    def __init__(self, data: Sequence[Any]) -> None:
        self._data = data

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return ReadOnlyList(self._data[index])
        return read_only(self._data[index])

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return map(read_only, self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadOnlyList):
            return list(self._data) == list(other._data)
        return isinstance(other, Sequence) and not isinstance(other, str) and list(self._data) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ReadOnlyList({self._data!r})"

    def to_list(self) -> list[Any]:
        return _copy(self._data)


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


EMPTY = ReadOnlyView({})


class NotKept(Mapping[str, Any]):
    """Stands for an object the scheduler chose not to keep: every read raises LookupError saying why."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __getitem__(self, key: str) -> Any:
        raise LookupError(self.why)

    def __iter__(self) -> Iterator[str]:
        raise LookupError(self.why)

    def __len__(self) -> int:
        raise LookupError(self.why)

    __eq__ = object.__eq__  # comparing is no read: equal to itself only
    __hash__ = object.__hash__


# Pods counted on nodes keep their object only on request: it would double the cache's memory.
POD_NOT_KEPT = NotKept(
    "the object of a pod counted on a node is kept only when an enabled plugin sets "
    "Plugin(reads_counted_pods_raw=True); set it on the plugin that reads it")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# After the first name, each step is ``.name`` or a bracketed quoted map key.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STEP = re.compile(r"""\.([A-Za-z_][A-Za-z0-9_]*)|\[(?:'([^']*)'|"([^"]*)")\]""")


class FieldPath:
    """A path to one field of an API object, parsed once: ``FieldPath("metadata.annotations['a/b']")``.
    Two paths naming the same field are equal whatever quotes they were written with."""

    __slots__ = ("steps", "text")

    def __init__(self, text: str) -> None:
        first = _NAME.match(text) if isinstance(text, str) else None
        if first is None:
            raise ValueError(f"field path {text!r}: expected a path such as \"metadata.annotations['key']\"")
        steps = [first.group()]
        pos = first.end()
        while pos < len(text):
            match = _STEP.match(text, pos)
            if match is None:
                raise ValueError(
                    f"field path {text!r}: cannot read it from character {pos + 1} ({text[pos:]!r}); write "
                    "dotted field names and bracketed quoted map keys, e.g. \"metadata.annotations['a/b']\"")
            steps.append(next(g for g in match.groups() if g is not None))
            pos = match.end()
        self.steps: tuple[str, ...] = tuple(steps)
        self.text = steps[0] + "".join(f".{s}" if _NAME.fullmatch(s) else f"['{s}']" for s in steps[1:])

    def read(self, obj: Mapping[str, Any] | None) -> Any:
        """The field's value in ``obj`` (the dict as read, not a copy), or MISSING."""
        value: Any = obj
        for step in self.steps:
            if not isinstance(value, Mapping):
                return MISSING
            value = value.get(step, MISSING)
            if value is MISSING:
                return MISSING
        return value

    def changed(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
        return self.read(before) != self.read(after)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldPath) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(self.steps)

    def __repr__(self) -> str:
        return f"FieldPath({self.text!r})"

    def __str__(self) -> str:
        return self.text

