"""Natural order for names people read: node-2 before node-10. One key for every list of nodes kubelab
shows (`./lab explain`, the placement page, the reports); the page's JavaScript (labkit/ui/static/views.js,
naturalCompare) follows the same rule: runs of digits compare as numbers, the rest as text."""

from __future__ import annotations

import re

_RUNS = re.compile(r"([0-9]+)")  # ASCII digits, as JavaScript's
_DIGITS = "0123456789"


def natural_key(name: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """A sort key: text runs compare as text, digit runs as numbers (a number sorts before text); names
    equal as numbers (node-1, node-01) by their text."""
    return tuple((0, int(part)) if part[0] in _DIGITS else (1, part) for part in _RUNS.split(name) if part), name


def natural_sorted(names: list[str]) -> list[str]:
    return sorted(names, key=natural_key)
