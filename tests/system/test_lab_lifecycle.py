"""The lab's life through the toolkit's own verbs, on real machines.

`invoke up --no-provision` brings up the two machines of tests/system/lab-lxc.yaml with Vagrant and
vagrant-lxc (the `lxc_lab` fixture), pyinfra reaches both over SSH through the generated inventory (the API
and the CLI with inventory/lab.py), `invoke status` reports them running, and `invoke down` removes the
machines and the lab's state. Stand-in: lxc system containers take the place of VirtualBox VMs (no
VirtualBox on these hosts); they boot systemd and sshd from a debootstrap-built Debian box like a VM would.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from pyinfra.facts.files import File, FindInFile
from pyinfra.facts.server import Command, Hostname

from tests.system import lxchost
from tests.system.conftest import PROJECT_ROOT, TIMINGS, RunningLab, run_logged

# The machine's memory limit as its own cgroup shows it (cgroup v2, else v1).
MEMORY_LIMIT = "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
# The machine's own identity: its SSH host key (new on re-creation) and when its init started (new on reboot).
IDENTITY = "cat /etc/ssh/ssh_host_ed25519_key.pub; cut -d' ' -f22 /proc/1/stat"

pytestmark = pytest.mark.system


def test_up_brings_every_node_up_at_its_address(lxc_lab: RunningLab):
    state = lxc_lab.pyinfra_state()
    for host in state.inventory:
        node = lxc_lab.lab.node(host.name)
        assert host.get_fact(Hostname) == node.name
        eth0 = host.get_fact(Command, "ip -4 -o address show dev eth0")
        assert f" {node.ip}/{lxc_lab.lab.network.host_only_cidr.prefixlen} " in eth0
        assert host.get_fact(Command, "timeout 60 systemctl is-system-running --wait || true") in ("running", "degraded")
        assert host.get_fact(Command, "id -u", _sudo=True) == "0"
        assert int(host.get_fact(Command, MEMORY_LIMIT)) == node.memory_mb * 1024 * 1024
    assert sorted(h.name for h in state.inventory) == sorted(n.name for n in lxc_lab.lab.nodes)


def test_inventory_groups_follow_the_roles(lxc_lab: RunningLab):
    groups = lxc_lab.groups()
    assert [name for name, _ in groups["control_plane"]] == [lxc_lab.lab.control_plane.name]
    assert [name for name, _ in groups["workers"]] == [n.name for n in lxc_lab.lab.workers]
    for _, data in groups["control_plane"] + groups["workers"]:
        assert data["lab"]["name"] == lxc_lab.lab.name


def test_pyinfra_cli_runs_commands_with_the_lab_inventory(lxc_lab: RunningLab):
    """The CLI path users take: `pyinfra inventory/lab.py ...` with KUBELAB_FILE naming the lab."""
    pyinfra = str(Path(sys.executable).with_name("pyinfra"))
    marker = "/var/tmp/kubelab-systest-pyinfra"
    run_logged([pyinfra, "-y", "--sudo", "inventory/lab.py", "exec", "--", f"hostname > {marker}"],
               "pyinfra exec over inventory/lab.py", timeout=120, cwd=PROJECT_ROOT, env=lxc_lab.env)
    state = lxc_lab.pyinfra_state()
    for host in state.inventory:
        assert host.get_fact(File, marker)["user"] == "root"  # written through sudo
        assert host.get_fact(FindInFile, marker, host.name) == [host.name]


def test_nodes_reach_each_other_on_the_bridge(lxc_lab: RunningLab):
    """kubeadm join needs the worker to reach the control plane: check TCP between the machines."""
    state = lxc_lab.pyinfra_state()
    for host in state.inventory:
        peer = next(n for n in lxc_lab.lab.nodes if n.name != host.name)
        banner = host.get_fact(Command, f"timeout 5 bash -c 'exec 3<>/dev/tcp/{peer.ip}/22; head -c 7 <&3'")
        assert banner == "SSH-2.0", f"{host.name} cannot reach {peer.name} at {peer.ip}:22"


def test_up_again_keeps_the_running_machines(lxc_lab: RunningLab):
    before = _identities(lxc_lab)
    lxc_lab.verb("up", "--no-provision")
    assert _identities(lxc_lab) == before
    assert sorted(lxchost.lab_containers(lxc_lab.lab, lxc_lab.lxcpath)) == sorted(
        f"{lxc_lab.lab.name}-{n.name}" for n in lxc_lab.lab.nodes)


def test_status_reports_every_machine_running(lxc_lab: RunningLab):
    out = lxc_lab.verb("status").stdout
    for node in lxc_lab.lab.nodes:
        row = next((line for line in out.splitlines() if node.name in line), None)
        assert row is not None, f"status lists no row for {node.name}:\n{out}"
        assert "running" in row and str(node.ip) in row, row
    assert "not provisioned yet" in out


def test_down_removes_machines_and_state(lxc_lab: RunningLab):
    """Runs last in the session (conftest moves it): it destroys the lab other suites share."""
    started = time.monotonic()
    lxc_lab.verb("down")
    TIMINGS["down"] = time.monotonic() - started
    assert lxchost.lab_containers(lxc_lab.lab, lxc_lab.lxcpath) == []
    assert not any((lxc_lab.lxcpath / f"{lxc_lab.lab.name}-{n.name}").exists() for n in lxc_lab.lab.nodes)
    assert not lxc_lab.paths.state_dir.exists()
    # status still works on a lab with no machines, and says so
    out = lxc_lab.verb("status").stdout
    for node in lxc_lab.lab.nodes:
        row = next(line for line in out.splitlines() if node.name in line)
        assert "not_created" in row or "not created" in row, row


def _identities(lab: RunningLab) -> dict[str, str]:
    state = lab.pyinfra_state()
    return {host.name: host.get_fact(Command, IDENTITY) for host in state.inventory}
