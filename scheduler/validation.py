"""What is wrong with a validated document, one line per problem, each starting with the field's path.

The one formatter for pydantic's errors across the toolkit: the scheduler's configuration, the lab
definition and the placement scenarios all report `nodes[1].ip: ...` or `profiles[0].pluginConfig[0].args.mood:
unknown field; ...` the same way. It lives in the scheduler package because the scheduler's image ships
only that package, and the host side imports it from there.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

# "relative.path[0]: message": a line a nested validator already prefixed with the path it is about.
_RELATIVE_PATH = re.compile(r"^[A-Za-z][\w.\[\]-]*$")


def field_path(loc: tuple, prefix: str = "") -> str:
    """`nodes[1].ip` for ("nodes", 1, "ip"), under `prefix` if given."""
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    return ".".join(part for part in (prefix, path) if part)


def field_problems(err: ValidationError, prefix: str = "") -> list[str]:
    lines = []
    for item in err.errors():
        where = field_path(item["loc"], prefix)
        if item["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field; remove it or check its spelling")
        elif item["type"] == "missing":
            lines.append(f"{where}: required field is missing")
        else:
            lines.extend(_message_lines(item, where))
    return lines


def _message_lines(item: dict, where: str) -> list[str]:
    """A validator's message may hold several problems, one per line, each "relative.path: message"."""
    parts = item["msg"].removeprefix("Value error, ").split("\n")
    lines = []
    for part in parts:
        head, sep, rest = part.partition(": ")
        if sep and _RELATIVE_PATH.match(head):
            lines.append(f"{field_path((), where)}.{head}: {rest}" if where else part)
            continue
        got = f" (got {item.get('input')!r})" if len(parts) == 1 and "(got" not in part else ""
        lines.append(f"{where or '(top level)'}: {part}{got}")
    return lines
