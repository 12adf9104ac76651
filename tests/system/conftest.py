"""System suite fixtures: a real two-machine lab with Vagrant and the lxc provider.

What is real here: Vagrant 2.3 with vagrant-lxc from Debian, lxc system containers booting systemd from a
Debian bookworm box built with debootstrap (scripts/build-lxc-box.sh), SSH, pyinfra, and the toolkit's own
verbs (`invoke up --no-provision`, `status`, `down`) reading tests/system/lab-lxc.yaml. The lxc containers
stand in for the VirtualBox VMs of a user's lab; they cannot run a kubelet (cgroup limits in nested
containers on these hosts), so this suite proves the machine lifecycle and the SSH/inventory path only.

Fixture `lxc_lab` (session scope) -> `RunningLab`, for any suite that needs running machines
(provisioning deploys, image side-load):

    lab           labdef.lab.Lab of tests/system/lab-lxc.yaml (name kubelab-systest)
    lab_file      Path of that file; pass it as `--lab` / KUBELAB_FILE to verbs and inventory/lab.py
    paths         labkit.paths.LabPaths: state folder, ssh.json, known_hosts, kubeconfig
    bridge        name of the host bridge the machines' eth0 sit on (created by this fixture)
    host_address  ipaddress.IPv4Interface: the host's address on that bridge (10.213.0.1/24). The machines
                  have no default route and no NAT: serve them packages (an HTTP apt repository, an image
                  registry) on this address; nothing else is reachable from inside
    lxcpath       where the containers live (the suite's private lxc state, see tests/system/lxchost.py)
    up_seconds    how long `invoke up --no-provision` took for both machines
    groups()      labkit.inventory groups (control_plane, workers) with SSH details and host data
    pyinfra_state()  a pyinfra State over those groups, every host connected (raises if one fails)
    verb(*args)   run `invoke <args> --lab <lab_file>` in the project; returns CompletedProcess (text)

The machines: user `vagrant` with password-less sudo, hostnames = node names, eth0 = node ip on the
bridge, systemd running, python3 present. Nothing is provisioned. Suites must not destroy the lab; the
lifecycle test's `down` step runs last in the session (see `pytest_collection_modifyitems`).

One session per host at a time: `system_lock` (an flock in the suite's lxc state folder) is held from
the box build to the last cleanup; a second session waits up to LOCK_WAIT_SECONDS for it. Suites that add
timings put them in TIMINGS (printed under "system suite timings" at the end of the run).

When not root or a tool is missing, tests using these fixtures skip with the reason; with CI=true they
fail instead. Everything (containers, bridge, state folder) is removed in the finalizers even when a step
fails; `python -m tests.system.lxchost cleanup` does the same by hand.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from labdef.lab import Lab, load_lab
from labkit.inventory import Groups, pyinfra_inventory, recorded_groups
from labkit.paths import PROJECT_ROOT, LabPaths
from labkit.pyinfra_run import forget_host_keys
from tests.system import lxchost
from tests.unavailable import skip_or_fail

BUILD_BOX = PROJECT_ROOT / "scripts" / "build-lxc-box.sh"
INSTALL_DEPS = PROJECT_ROOT / "scripts" / "install-test-deps.sh"
REQUIRED_TOOLS = ("vagrant", "lxc-create", "lxc-ls", "debootstrap", "ip", "mount", "sudo", "ssh")
LAST_TESTS = ("test_down_removes_machines_and_state",)
LOCK_WAIT_SECONDS = 480  # another session on this host (a developer's run) finishes its lab first

# Durations measured while the suite runs, printed in pytest's terminal summary.
TIMINGS: dict[str, float] = {}
# Other measured facts (what a step sent, say), printed after the timings.
MEASURED: list[str] = []




def _missing_prerequisite() -> str | None:
    if os.geteuid() != 0:
        return "the system suite needs root (lxc containers, a host bridge, a mount namespace)"
    missing = [tool for tool in REQUIRED_TOOLS if not shutil.which(tool)]
    if missing:
        return f"missing {', '.join(missing)}: run {INSTALL_DEPS.relative_to(PROJECT_ROOT)} as root"
    plugins = subprocess.run(["vagrant", "plugin", "list"], capture_output=True, text=True, check=False)
    if "vagrant-lxc" not in plugins.stdout:
        return f"the vagrant-lxc plugin is not installed: run {INSTALL_DEPS.relative_to(PROJECT_ROOT)} as root"
    return None


def run_logged(args: list[str], what: str, timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    """Run a step; on failure raise with its last output lines (the whole log is long and noisy)."""
    proc = subprocess.run(args, capture_output=True, text=True, check=False, timeout=timeout, **kwargs)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise AssertionError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc


@dataclass
class RunningLab:
    lab: Lab
    lab_file: Path
    paths: LabPaths
    bridge: str
    host_address: ipaddress.IPv4Interface
    lxcpath: Path
    up_seconds: float = 0.0
    env: dict[str, str] = field(default_factory=dict)

    def groups(self) -> Groups:
        return recorded_groups(self.lab)

    def pyinfra_state(self):
        from pyinfra.api import Config, State
        from pyinfra.api.connect import connect_all

        forget_host_keys()  # machines re-created since an earlier connection in this process have new keys
        state = State(pyinfra_inventory(self.groups()), Config())
        connect_all(state)
        if state.failed_hosts:
            names = ", ".join(sorted(h.name for h in state.failed_hosts))
            raise AssertionError(f"pyinfra could not connect to {names}")
        return state

    def verb(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "invoke", *args, "--lab", str(self.lab_file)]
        if check:
            return run_logged(cmd, f"invoke {' '.join(args)}", timeout, cwd=PROJECT_ROOT, env=self.env)
        return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout,
                              cwd=PROJECT_ROOT, env=self.env)


# Set once, right after collection: why the host cannot run the suite, or None when lxc is isolated.
_HOST_PROBLEM: list[str | None] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move the session into its own lxc state before any test runs, if a collected test needs the lab.

    It has to happen here: unshare() refuses a process with threads, and other suites' fixtures (API test
    servers, pyinfra's gevent pool) start threads as soon as tests run.
    """
    if _HOST_PROBLEM or not any("system_host" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    problem = _missing_prerequisite()
    if problem is None:
        try:
            lxchost.isolate_lxc_config()
        except (lxchost.HostSetupError, OSError) as err:
            problem = f"could not give lxc its own state: {err}"
    _HOST_PROBLEM.append(problem)


@pytest.fixture(scope="session")
def system_host() -> Path:
    """Root, the tools, and lxc pointed at the suite's private state; returns the lxcpath in use."""
    problem = _HOST_PROBLEM[0] if _HOST_PROBLEM else _missing_prerequisite()
    if problem:
        skip_or_fail(problem)
    return lxchost.isolate_lxc_config()


@pytest.fixture(scope="session")
def system_lock(system_host: Path) -> Iterator[None]:
    """This session alone builds the box and runs the lab on this host until the session ends."""
    with lxchost.exclusive_use(wait_seconds=LOCK_WAIT_SECONDS):
        yield


@pytest.fixture(scope="session")
def lxc_box(system_lock: None) -> str:
    """The Debian bookworm lxc box named in the lab definition, built (or found cached) and added."""
    box = load_lab(lxchost.LAB_FILE).provider.box
    started = time.monotonic()
    run_logged(["bash", str(BUILD_BOX), box], f"building box {box} ({BUILD_BOX.name})", timeout=900)
    TIMINGS["box build (cold or cached)"] = time.monotonic() - started
    return box


@pytest.fixture(scope="session")
def lxc_lab(system_host: Path, system_lock: None, lxc_box: str) -> Iterator[RunningLab]:
    lab = load_lab(lxchost.LAB_FILE)
    lxchost.cleanup(lab)  # leftovers of an interrupted run would make `up` or the bridge fail
    running = RunningLab(
        lab=lab, lab_file=lxchost.LAB_FILE, paths=LabPaths.for_lab(lab.name), bridge=lab.provider.lxc_bridge,
        host_address=lxchost.host_interface(lab), lxcpath=system_host,
        env=dict(os.environ, KUBELAB_FILE=str(lxchost.LAB_FILE)),
    )
    try:
        lxchost.create_bridge(lab)
        started = time.monotonic()
        running.verb("up", "--no-provision")
        running.up_seconds = TIMINGS["up, two machines"] = time.monotonic() - started
        yield running
    finally:
        # `down` is what users run; cleanup then removes whatever it could not (or a failed `up` left).
        started = time.monotonic()
        running.verb("down", check=False)
        TIMINGS.setdefault("down", time.monotonic() - started)
        lxchost.cleanup(lab)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The lifecycle test's `down` step destroys the shared lab: run it after every other test."""
    last = [item for item in items if item.name in LAST_TESTS and "tests/system/" in item.nodeid]
    for item in last:
        items.remove(item)
        items.append(item)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if TIMINGS:
        terminalreporter.section("system suite timings")
        for what, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{what}: {seconds:.1f} s")
        for line in MEASURED:
            terminalreporter.write_line(line)
