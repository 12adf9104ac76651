"""Fast checks of the system suite's host helpers (no root, no lxc): lock, addresses, private lxc config."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys

import pytest

from labdef.lab import load_lab
from tests.system import lxchost


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(lxchost, "LXC_STATE", tmp_path)
    monkeypatch.setattr(lxchost, "LOCK_FILE", tmp_path / "lock")
    return tmp_path


def test_a_second_holder_is_refused_with_the_first_ones_pid(state_dir):
    refused = pytest.raises(lxchost.HostSetupError, match=rf"pid {os.getpid()}\b")
    with lxchost.exclusive_use(wait_seconds=0), refused, lxchost.exclusive_use(wait_seconds=0):
        pass
    with lxchost.exclusive_use(wait_seconds=0):  # released on exit
        pass


def test_the_lock_is_not_inherited_by_the_tools_the_holder_starts(state_dir):
    """A `vagrant` left running after pytest died must not keep the next run out."""
    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
             "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)")
    with lxchost.exclusive_use(wait_seconds=0):
        held = subprocess.run([sys.executable, "-c", probe, str(state_dir / "lock")], check=False,
                              capture_output=True)
        assert held.returncode != 0  # another process is refused while we hold it
        child = subprocess.Popen(["sleep", "30"])
    try:
        free = subprocess.run([sys.executable, "-c", probe, str(state_dir / "lock")], check=False)
        assert free.returncode == 0, "the lock outlived its holder through a child process"
    finally:
        child.kill()
        child.wait()


def test_host_takes_the_first_address_of_the_node_network():
    lab = load_lab(lxchost.LAB_FILE)
    assert lxchost.host_interface(lab) == ipaddress.IPv4Interface("10.213.0.1/24")
    assert all(node.ip != lxchost.host_interface(lab).ip for node in lab.nodes)


def test_private_default_conf_drops_the_hosts_network(tmp_path, monkeypatch):
    (tmp_path / "default.conf").write_text(
        "lxc.net.0.type = veth\nlxc.net.0.link = lxcbr0\nlxc.apparmor.profile = generated\n")
    monkeypatch.setattr(lxchost, "HOST_LXC_ETC", tmp_path)
    conf = lxchost._private_default_conf()
    assert "lxcbr0" not in conf and "lxc.net" not in conf
    assert "lxc.apparmor.profile = generated" in conf
