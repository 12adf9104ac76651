"""apt operations wait for a lock another apt or dpkg holds (unattended-upgrades on a fresh box), and fail at
once on anything else. The generated shell runs for real under /bin/sh; `apt-get` is a stand-in script on
PATH that prints apt's own lock error (apt-pkg/contrib/fileutl.cc: "Could not get lock %s. It is held by
process %d (%s)") a given number of times, then succeeds. It models nothing else of apt."""

from __future__ import annotations

import os
import subprocess

import pytest

from deploys import operations

STANDIN = """#!/bin/sh
count=$(cat "$STATE" 2>/dev/null || echo 0); count=$((count + 1)); echo $count > "$STATE"
if [ $count -le "$LOCKED_RUNS" ]; then
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2; exit 100
fi
if [ -n "$OTHER_ERROR" ]; then echo "E: $OTHER_ERROR" >&2; exit 100; fi
echo "Reading package lists..."
"""


@pytest.fixture
def apt_get(tmp_path):
    (tmp_path / "apt-get").write_text(STANDIN)
    (tmp_path / "apt-get").chmod(0o755)

    def run(locked_runs: int, other_error: str = "") -> tuple[int, str, int]:
        state = tmp_path / "runs"
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "STATE": str(state),
               "LOCKED_RUNS": str(locked_runs), "OTHER_ERROR": other_error}
        script = operations.waiting_for_apt_locks("apt-get update", attempts=3, pause_s=0)
        done = subprocess.run(["/bin/sh", "-c", script], check=False, env=env, capture_output=True, text=True,
                              timeout=30)
        return done.returncode, done.stdout, int(state.read_text())

    return run


def test_update_waits_while_another_apt_holds_the_lists_lock(apt_get):
    status, output, runs = apt_get(locked_runs=2)
    assert (status, runs) == (0, 3)
    assert output.count("Could not get lock /var/lib/apt/lists/lock") == 2
    assert output.endswith("Reading package lists...\n")


def test_waiting_is_bounded(apt_get):
    status, _, runs = apt_get(locked_runs=10)
    assert (status, runs) == (100, 3)


def test_any_other_failure_fails_at_once_with_apts_message(apt_get):
    status, output, runs = apt_get(locked_runs=0, other_error="The repository 'x' does not have a Release file.")
    assert (status, runs) == (100, 1)
    assert "does not have a Release file" in output
