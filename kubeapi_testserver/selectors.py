"""Label and field selectors, parsed and matched as the API server does.

Label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
(equality-based =, ==, != and set-based in, notin, exists, !key; grammar of
k8s.io/apimachinery/pkg/labels/selector.go, which also accepts the numeric > and <).
Field selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
(=, == and != joined by commas; each resource supports a fixed set of fields, an unknown field is
400 BadRequest "field label not supported: X"; a missing field compares as the empty string, which is
how `spec.nodeName=` selects unscheduled pods).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeapi_testserver.errors import StatusError

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=|>|<)\s*({_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            # Objects without the key match != and notin (labels docs: "!= ... or have no such label").
            return not present or value not in self.values
        if not present:
            return False
        try:
            have, want = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == ">" else have < want


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside the parentheses of an in/notin set."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_label_selector(text: str | None) -> tuple[LabelRequirement, ...]:
    if not text or not text.strip():
        return ()
    reqs = []
    for term in _split_top_level(text):
        if m := _SET_RE.match(term):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            if not values:
                raise StatusError.bad_request(f"unable to parse requirement: {term.strip()!r}: "
                                           "for 'in', 'notin' operators, values set can't be empty")
            reqs.append(LabelRequirement(m.group(1), m.group(2), values))
        elif m := _CMP_RE.match(term):
            op = "=" if m.group(2) == "==" else m.group(2)
            reqs.append(LabelRequirement(m.group(1), op, (m.group(3),)))
        elif m := _EXISTS_RE.match(term):
            reqs.append(LabelRequirement(m.group(2), "!" if m.group(1) else "exists", ()))
        else:
            raise StatusError.bad_request(f"unable to parse requirement: found {term.strip()!r}, "
                                       "expected: label selector requirement")
    return tuple(reqs)


def labels_match(reqs: tuple[LabelRequirement, ...], obj: Mapping[str, Any]) -> bool:
    if not reqs:
        return True
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str


def _split_escaped(text: str, sep: str) -> list[str]:
    """Split on `sep` not preceded by a backslash (fields/selector.go splitTerms)."""
    out, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, supported: Mapping[str, Callable[[Mapping[str, Any]], str]]
                         ) -> tuple[FieldRequirement, ...]:
    if not text or not text.strip():
        return ()
    reqs = []
    for term in _split_escaped(text, ","):
        term = term.strip()
        if not term:
            continue
        for op, equal in (("!=", False), ("==", True), ("=", True)):
            idx = term.find(op)
            if idx > 0:
                field, value = term[:idx].strip(), _unescape(term[idx + len(op):].strip())
                break
        else:
            raise StatusError.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        if field not in supported:
            raise StatusError.bad_request(f"field label not supported: {field}")
        reqs.append(FieldRequirement(field, equal, value))
    return tuple(reqs)


def fields_match(reqs: tuple[FieldRequirement, ...], obj: Mapping[str, Any],
                 supported: Mapping[str, Callable[[Mapping[str, Any]], str]]) -> bool:
    for req in reqs:
        if (supported[req.field](obj) == req.value) != req.equal:
            return False
    return True


def path_getter(path: str, default: str = "") -> Callable[[Mapping[str, Any]], str]:
    """A field getter for a dotted path; missing is `default`, booleans are "true"/"false".

    The real server renders fields from typed Go structs, so an absent bool (spec.unschedulable)
    reads "false", not "": pass default="false" for those.
    """
    keys = path.split(".")

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            if not isinstance(cur, Mapping):
                return default
            cur = cur.get(key)
            if cur is None:
                return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


@dataclass(frozen=True, slots=True)
class Selector:
    labels: tuple[LabelRequirement, ...]
    fields: tuple[FieldRequirement, ...]
    supported: Mapping[str, Callable[[Mapping[str, Any]], str]]

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return labels_match(self.labels, obj) and fields_match(self.fields, obj, self.supported)


def selector_for(fields: Mapping[str, Callable[[Mapping[str, Any]], str]], query: Mapping[str, str],
                 name: str | None = None) -> Selector:
    """The selector of a list/watch request; a watch on one named object adds metadata.name=NAME."""
    reqs = parse_field_selector(query.get("fieldSelector"), fields)
    if name is not None:
        reqs = reqs + (FieldRequirement("metadata.name", True, name),)
    return Selector(parse_label_selector(query.get("labelSelector")), reqs, fields)
