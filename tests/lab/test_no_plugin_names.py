"""The lab side knows no plugin: the bundled examples ship through scheduler.plugins like a user's, so no
host-side module or template names them (`grep -rn "NetworkAware|LeastLoaded|high-speed" labkit/ labdef/
templates/` finds nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NAMES = ("NetworkAware", "LeastLoaded", "high-speed")


@pytest.mark.parametrize("folder", ["labkit", "labdef", "templates"])
def test_no_host_side_file_names_the_bundled_plugins(folder: str) -> None:
    paths = [path for path in sorted((REPO / folder).rglob("*")) if path.is_file() and "__pycache__" not in path.parts]
    assert paths, f"{REPO / folder} holds no file: it moved, and this check would pass on nothing"
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in paths
             for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if any(name in line for name in NAMES)]
    assert found == []
