"""Lab definitions for the fast tests: the shipped lab.yaml and variants built from it."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, parse_lab


def lab_data() -> dict[str, Any]:
    return yaml.safe_load(DEFAULT_LAB_FILE.read_text())


def make_lab(workers: int | None = None, **overrides: dict[str, Any]) -> Lab:
    """The default lab, optionally with `workers` workers (.11, .12, ...) and sections overridden."""
    data = copy.deepcopy(lab_data())
    if workers is not None:
        control_plane = next(n for n in data["nodes"] if n["role"] == "control-plane")
        base = control_plane["ip"].rsplit(".", 1)[0]
        data["nodes"] = [control_plane] + [
            {"name": f"k8s-worker-{i:02d}", "role": "worker", "ip": f"{base}.{10 + i}", "cpus": 2,
             "memory_mb": 2048}
            for i in range(1, workers + 1)
        ]
        data["placement"] = {"scenarios": ["plugins/network_aware/scenarios.yaml"]}
    for section, values in overrides.items():
        data[section] = {**data.get(section, {}), **values}
    return parse_lab(data, "test-lab")
