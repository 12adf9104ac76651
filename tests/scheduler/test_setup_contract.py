"""The contract check's ``setup`` rule (scheduler.testing.contract.setup_problems): a setup class is made and
its points are called as the framework calls them; each way a point can break the framework is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scheduler.framework import Code, Plugin, Status
from scheduler.testing import check_plugin
from scheduler.testing.contract import setup_problems

ROOT = Path(__file__).resolve().parents[2]


def plugin_with(**methods) -> Plugin:
    class Setup:
        def __init__(self, args, handle):
            self.handle = handle

    for name, fn in methods.items():
        setattr(Setup, name, fn)
    return Plugin(name="Probe", setup=Setup)


def details(plugin: Plugin) -> list[str]:
    return [p.detail for p in setup_problems(plugin, seeds=range(2))]


def test_a_well_behaved_setup_class_has_no_problem():
    plugin = plugin_with(permit=lambda self, cycle, pod, node: Status(Code.WAIT, timeout=30),
                         reserve=lambda self, cycle, pod, node: None,
                         unreserve=lambda self, cycle, pod, node: None,
                         sort_key=lambda self, pod, enqueued_at: (-pod.priority, enqueued_at))
    assert setup_problems(plugin) == []


def test_a_point_that_raises_is_named_with_the_exception():
    def permit(self, cycle, pod, node):
        return self.handle.objects("example.com/v1/things").get_object(pod.namespace, "x")

    [detail] = details(plugin_with(permit=permit))
    assert detail.startswith("permit: raised KeyError: ")
    assert "example.com/v1/things is not watched" in detail


def test_a_wait_without_a_timeout_or_outside_permit_is_named():
    found = details(plugin_with(permit=lambda self, cycle, pod, node: Status(Code.WAIT),
                                pre_bind=lambda self, cycle, pod, node: Status(Code.WAIT, timeout=5)))
    assert [d.split(":")[0] for d in found] == ["permit", "pre_bind"]
    assert "timeout of 0.0s" in found[0]


def test_something_other_than_a_status_is_named():
    [detail] = details(plugin_with(pre_enqueue=lambda self, pod: True))
    assert detail.startswith("pre_enqueue: returned True: return None or a scheduler.framework.Status")


def test_sort_keys_that_do_not_compare_are_named():
    [detail] = details(plugin_with(sort_key=lambda self, pod, enqueued_at: None if enqueued_at else (1,)))
    assert detail.startswith("sort_key: the keys of two pods do not compare: TypeError")


def test_a_setup_class_that_cannot_be_made_is_named():
    class Broken:
        def __init__(self, args, handle):
            raise RuntimeError("no config")

        def permit(self, cycle, pod, node):
            return None

    problems = check_plugin(Plugin(name="Broken", setup=Broken))
    assert [str(p) for p in problems] == ["Broken: setup: Broken(default args, handle) raised RuntimeError: no config"]


def test_the_example_folders_pass_the_check_command():
    """examples/coscheduling and examples/quota, named by folder as a user names theirs."""
    result = subprocess.run([sys.executable, "-m", "scheduler.testing", "check", "examples/coscheduling",
                             "examples/quota"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   Coscheduling (examples/coscheduling)" in result.stdout
    assert "ok   NamespaceQuota (examples/quota)" in result.stdout
