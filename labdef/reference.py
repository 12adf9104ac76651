"""The lab definition's field reference, generated from its pydantic models so it cannot drift from them.

``python -m labdef.reference`` prints a Markdown table per section: each field's path, type, default and
description. The description is the field's ``Field(description=...)``, else the comment written beside the field
in its model's source (on the field's line, or the lines just above it), so the comments that explain a field to
the reader of labdef/lab.py are the ones users read. docs/reference/lab-definition.md shows that output in an
output block, which the docs tests compare with what this module prints today.
"""

from __future__ import annotations

import ast
import enum
import inspect
import textwrap
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from labdef.lab import Lab


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _args(annotation: Any) -> tuple[Any, ...]:
    return typing.get_args(annotation)


def _unwrap(annotation: Any) -> Any:
    """Annotated[X, ...] -> X."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = _args(annotation)[0]
    return annotation


def type_name(annotation: Any) -> str:
    """A type as a reader of YAML thinks of it: `string`, `integer`, one of the literal values, a list of..."""
    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{value}`" for value in _args(annotation))
    if origin in (typing.Union, types.UnionType):
        parts = [type_name(a) for a in _args(annotation) if a is not type(None)]
        return " \\| ".join(parts)
    if origin in (list, tuple, set, frozenset):
        inner = [a for a in _args(annotation) if a is not Ellipsis]
        return f"list of {type_name(inner[0])}" if inner else "list"
    if origin is dict:
        return "mapping"
    if _is_model(annotation):
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    names = {str: "string", int: "integer", bool: "boolean", float: "number"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation)).replace("IPv4Network", "IPv4 CIDR")


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (list, tuple)) and not value:
        return "`[]`"
    if isinstance(value, dict) and not value:
        return "`{}`"
    return f"`{value}`"


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds (directly, optionally, or as a list of them) and whether it is a list."""
    annotation = _unwrap(annotation)
    if _is_model(annotation):
        return annotation, False
    origin = typing.get_origin(annotation)
    if origin in (list, tuple):
        inner = _unwrap(_args(annotation)[0]) if _args(annotation) else None
        if _is_model(inner):
            return inner, True
    if origin in (typing.Union, types.UnionType):
        for arg in _args(annotation):
            model, many = _submodel(arg)
            if model is not None:
                return model, many
    return None, False


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the comment beside it in the model's class body: on the field's own line, else the run of
    comment lines right above it."""
    try:
        lines, _ = inspect.getsourcelines(model)
    except (OSError, TypeError):
        return {}
    tree = ast.parse(textwrap.dedent("".join(lines)))
    comments: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        row = node.lineno - 1
        _, _, trailing = lines[row].partition("  # ")
        if trailing:
            comments[node.target.id] = trailing.strip()
            continue
        above = []
        i = row - 1
        while i >= 0 and lines[i].strip().startswith("#"):
            above.insert(0, lines[i].strip().lstrip("#").strip())
            i -= 1
        if above:
            comments[node.target.id] = " ".join(above)
    return comments


def rows(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(path, type, default, description) of every leaf field, depth first, in the model's order."""
    comments = field_comments(model)
    for name, info in model.model_fields.items():
        key = info.alias or name
        path = f"{prefix}{key}"
        sub, many = _submodel(info.annotation)
        description = " ".join((info.description or comments.get(name, "")).split()).replace("|", "\\|")
        if sub is not None:
            if many:
                yield path, "list of mappings", _default(info), description
                yield from rows(sub, f"{path}[].")
            else:
                yield from rows(sub, f"{path}.")
            continue
        yield path, type_name(info.annotation), _default(info), description


def markdown() -> str:
    lines = []
    section = None
    for path, kind, default, description in rows(Lab):
        top = path.split(".")[0].split("[")[0]
        if top != section:
            section = top
            lines += ["", f"### `{top}`", "", "| field | type | default | description |", "|---|---|---|---|"]
        lines.append(f"| `{path}` | {kind} | {default} | {description} |")
    return "\n".join(lines).lstrip("\n") + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
