"""`python -m scheduler.testing check SOURCE`: the contract checks on a user's plugin folder or file, run as
a plugin author runs them (a subprocess, from the author's own folder). A plugin that keeps the contract
passes with exit 0; a deliberately broken one fails with exit 1 and a line naming the plugin and each rule
it breaks; a source that cannot be loaded exits 2 saying why."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests import bundled_plugins

RACK = '''
from typing import Literal

from scheduler.framework import Args, Code, Plugin, Status


class RackArgs(Args):
    annotation: str = "example.com/rack"
    mode: Literal["require", "prefer"] = "require"


def pre_filter(pod, args):
    want = pod.raw["metadata"].get("annotations", {}).get("example.com/want-rack")
    if want is None or args.mode != "require":
        return None
    return args.annotation, want, Status(Code.UNSCHEDULABLE, ("node(s) in another rack",), "Rack")


def filter_node(state, node):
    annotation, want, reject = state
    return None if node.raw["metadata"].get("annotations", {}).get(annotation) == want else reject


def filter_batch(state, nodes):
    BATCH_BODY


PLUGINS = [Plugin("Rack", args=RackArgs, pre_filter=pre_filter, filter_node=filter_node,
                  filter_batch=filter_batch,
                  requeue_on_fields=("node.metadata.annotations['example.com/rack']",
                                     "pod.metadata.annotations['example.com/want-rack']", EXTRA_FIELD))]
'''
GOOD_BATCH = "return [filter_node(state, node) for node in nodes]"
# Passes every node but the last one's verdict, as a too-clever fast path might.
BROKEN_BATCH = "return [filter_node(state, node) for node in nodes[:-1]] + [None]"


def _plugin_folder(root: Path, batch: str, extra_field: str) -> Path:
    folder = root / "rack"
    folder.mkdir()
    body = textwrap.dedent(RACK).replace("BATCH_BODY", batch).replace("EXTRA_FIELD", repr(extra_field))
    (folder / "__init__.py").write_text(body)
    return folder


def _check(cwd: Path, *sources: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scheduler.testing", "check", "--seeds", "3", *sources],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_a_plugin_keeping_the_contract_passes(tmp_path):
    folder = _plugin_folder(tmp_path, GOOD_BATCH, "node.metadata.labels")
    result = _check(tmp_path, str(folder))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok   Rack ({folder})" in result.stdout and "1 of 1 plugin(s) pass" in result.stdout


def test_a_broken_plugin_fails_naming_the_plugin_and_each_rule(tmp_path):
    folder = _plugin_folder(tmp_path, BROKEN_BATCH, "node.spec.taint")
    result = _check(tmp_path, str(folder))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("FAIL Rack: batch-forms: filter_batch gives pass for node ")
               and "where filter_node gives UNSCHEDULABLE 'node(s) in another rack'" in line for line in lines)
    assert "FAIL Rack: requeue: requeue_on_fields node.spec.taint: 'taint' is not a field of a Node's spec " \
           "in Kubernetes 1.36 (did you mean taints?)" in lines
    assert lines[-1] == "0 of 1 plugin(s) pass"


def test_a_source_that_cannot_load_exits_2_saying_why(tmp_path):
    result = _check(tmp_path, str(tmp_path / "missing.py"))
    assert result.returncode == 2
    assert "missing.py: not found" in result.stderr


def test_the_bundled_plugins_pass_the_same_command(tmp_path):
    """The in-tree plugins by module name, the bundled examples by folder, as a user names theirs."""
    result = _check(tmp_path, "scheduler.plugins", *bundled_plugins.SOURCES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   NodeResourcesFit (scheduler.plugins)" in result.stdout
    assert f"ok   NetworkAware ({bundled_plugins.SOURCES[0]})" in result.stdout
    assert f"ok   LeastLoaded ({bundled_plugins.SOURCES[1]})" in result.stdout
