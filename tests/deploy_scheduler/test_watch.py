"""deploy-scheduler --watch (labkit.scheduler_deploy.watch) on a folder of the test's own: real file events
through watchfiles, a stand-in deploy that records its calls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from labdef.errors import UserError
from labkit.scheduler_deploy.verb import timings_line
from labkit.scheduler_deploy.watch import watch_and_deploy


class Loop:
    """watch_and_deploy in a thread; `deploys` counts rounds, `lines` is what it printed."""

    def __init__(self, roots: list[Path], fail_on: set[int] = frozenset()) -> None:
        self.root, self.plugin, self.fail_on = roots[0], roots[1], fail_on
        self.lines: list[str] = []
        self.deploys = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=watch_and_deploy,
                                       args=(self.deploy, self.lines.append, roots, self.stop), daemon=True)

    def deploy(self) -> None:
        self.deploys += 1
        if self.deploys in self.fail_on:
            raise UserError(f"build {self.deploys} failed: SyntaxError in plugins/x.py")

    def wait_for(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.deploys < count or not self.lines[-1].startswith("watching"):
            assert time.monotonic() < deadline, f"{self.deploys} rounds, wanted {count}: {self.lines}"
            time.sleep(0.05)
        time.sleep(0.3)  # the watcher is back in place before the next save


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "scheduler" / "plugins").mkdir(parents=True)
    (tmp_path / "elsewhere" / "my_plugin").mkdir(parents=True)  # a plugin folder outside the tree
    running = Loop([tmp_path / "scheduler", tmp_path / "elsewhere" / "my_plugin"], fail_on={2})
    running.thread.start()
    yield running
    running.stop.set()
    running.thread.join(timeout=10)


def test_deploys_at_start_and_again_after_each_save(loop):
    loop.wait_for(1)
    (loop.root / "plugins" / "x.py").write_text("x = 1\n")
    loop.wait_for(2)
    assert "changed: scheduler/plugins/x.py" in loop.lines


def test_a_save_in_a_plugin_folder_deploys_again(loop):
    loop.wait_for(1)
    assert loop.lines[-1] == f"watching {loop.root}, {loop.plugin} for changes (Ctrl-C ends it)"
    (loop.plugin / "filter.py").write_text("x = 1\n")
    loop.wait_for(2)
    assert "changed: my_plugin/filter.py" in loop.lines


def test_a_failed_round_is_reported_and_the_loop_goes_on(loop):
    loop.wait_for(1)
    (loop.root / "plugins" / "x.py").write_text("x = (\n")
    loop.wait_for(2)
    assert "deploy failed: build 2 failed: SyntaxError in plugins/x.py" in loop.lines
    (loop.root / "plugins" / "x.py").write_text("x = 1\n")
    loop.wait_for(3)


def test_editor_and_bytecode_files_do_not_trigger_a_round(loop):
    loop.wait_for(1)
    (loop.root / ".x.py.swp").write_text("swap")
    (loop.root / "__pycache__").mkdir()
    (loop.root / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    time.sleep(2.5)  # longer than the debounce
    assert loop.deploys == 1


def test_stopping_ends_the_loop_cleanly(loop):
    loop.wait_for(1)
    loop.stop.set()
    loop.thread.join(timeout=10)
    assert not loop.thread.is_alive() and loop.lines[-1] == "stopped watching"


def test_the_timings_line_names_every_step():
    assert timings_line({"image": 4.21, "side-load": 3.0, "apply": 0.12, "rollout": 2.5}) == (
        "took 9.8 s: image 4.2 s, side-load 3.0 s, apply 0.1 s, rollout 2.5 s")


def test_every_round_gets_a_fresh_inventory(monkeypatch, tmp_path):
    """pyinfra Host objects keep their last run's operations: a second run over the same inventory fails
    (KeyError in State.get_op_order, seen in the system suite's inner-loop test), so each round loads anew."""
    from labdef.lab import DEFAULT_LAB_FILE, load_lab
    from labkit.scheduler_deploy import verb

    used = []
    monkeypatch.setattr(verb, "lab_hosts", lambda *args: object())
    monkeypatch.setattr(verb, "deploy_scheduler", lambda lab, kubeconfig, inventory, *rest: used.append(inventory))
    watched = []
    monkeypatch.setattr(verb, "watch_and_deploy", lambda deploy, echo, roots: (watched.extend(roots), deploy(), deploy()))
    verb.run_verb(load_lab(DEFAULT_LAB_FILE), DEFAULT_LAB_FILE, tmp_path / "kubeconfig", watch=True)
    assert len(used) == 2 and used[0] is not used[1]
    # scheduler/ and the lab's plugin folders
    root = DEFAULT_LAB_FILE.parent
    assert watched == [root / "scheduler", root / "plugins" / "network_aware", root / "plugins" / "least_loaded"]
