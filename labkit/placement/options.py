"""test-placement's options: the settings of one run (`PlacementOptions`) and each option's help text, one definition
shared by `./lab test-placement` (tasks.py) and `python -m labkit.placement` (cli.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class PlacementOptions:
    kubeconfig: Path
    context: str | None = None
    keep: bool = False
    wait_running: bool = False
    include_restart: bool = False
    timeout: float = 60.0  # seconds to wait for a binding, an event, or Running
    probe_seconds: float = 15.0  # how long the scheduler probe waits for a sign of life
    scheduler_config: Path | None = None
    only: list[str] | None = None
    scenarios_files: list[Path] | None = None  # None: the built-in file and the lab's placement.scenarios
    poll: float = 0.2
    label_settle_seconds: float = 1.0


# The options both command lines offer, by their command-line name.
HELP = {
    "kubeconfig": "cluster to test (default: the lab's exported kubeconfig)",
    "context": "kubeconfig context (default: its current one)",
    "json": "print the report as JSON",
    "html": "also write the report (verdicts, each scenario's placements, misses explained) as one self-contained "
            "HTML file",
    "keep": "leave the namespace and the last scenario's pods and node changes for inspection",
    "wait-running": "also wait for bound pods to be Running",
    "include-restart": "also scale the scheduler to 0 and back (a pod must wait, then be bound)",
    "timeout": f"seconds to wait for each binding or event (default: {PlacementOptions.timeout:.0f})",
    "scheduler-config": "config of a scheduler running outside the cluster (for the explanations)",
    "scenarios": ("run the scenarios of this file (repeatable) instead of the built-in ones and the lab "
                  "definition's placement.scenarios"),
    "only": "run only the scenario of this id (repeatable)",
}
