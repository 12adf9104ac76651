"""The host side of the system suite's lxc lab: private lxc state, the lab's bridge, and cleanup.

lxc state. vagrant-lxc runs the lxc tools without `-P` and asks `lxc-config lxc.lxcpath` where containers
live, so the only setting it honours is lxc's global config (/etc/lxc/lxc.conf, read by root, with no
environment override). Rather than edit the host's file, `isolate_lxc_config()` moves the calling process
(the pytest session) into its own mount namespace and bind-mounts a private config folder over /etc/lxc
there: every `vagrant`, `sudo` and `lxc-*` started by the suite then keeps containers under
LXC_STATE/containers, while the host's /etc/lxc and /var/lib/lxc stay untouched. The private default.conf
drops the host's lxcbr0 network (the Vagrantfile puts eth0 on the lab's own bridge).

One run at a time. Two sessions on one host would share the lab's name, bridge and addresses, so the
fixtures hold `exclusive_use()` (a lock file in LXC_STATE) from the first cleanup to the last; a second
session waits for the first to finish.

Cleanup. `cleanup(lab)` stops and destroys the lab's containers (by their `<lab name>-` prefix, with
`lxc-* -P`, so it needs no namespace), removes the lab's state folder and deletes its bridge. It is what
the fixtures' finalizers call, and it can be run by hand after an interrupted run:

    python -m tests.system.lxchost cleanup [tests/system/lab-lxc.yaml]
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from labdef.lab import Lab, load_lab
from labkit.paths import LabPaths

LAB_FILE = Path(__file__).resolve().parent / "lab-lxc.yaml"
LXC_STATE = Path(os.environ.get("KUBELAB_LXC_STATE", "/var/lib/kubelab/lxc-systest"))
LXCPATH = LXC_STATE / "containers"
LXC_ETC = LXC_STATE / "etc-lxc"
LOCK_FILE = LXC_STATE / "lock"
HOST_LXC_ETC = Path("/etc/lxc")
CLONE_NEWNS = 0x00020000


class HostSetupError(RuntimeError):
    """The host could not be prepared for the lab; the message says which step and why."""


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise HostSetupError(f"`{' '.join(args)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


# -- one run at a time ------------------------------------------------------------------------------

@contextlib.contextmanager
def exclusive_use(wait_seconds: float) -> Iterator[None]:
    """Hold the host's system-lab lock (waiting up to wait_seconds for another run to finish).

    The lock is an flock on a descriptor only this process holds (not inherited by the tools it starts),
    so it is released when the holder exits, however it exits.
    """
    LXC_STATE.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode().strip() or "unknown"
                    raise HostSetupError(
                        f"another run (pid {holder}) is using the system lab ({LOCK_FILE}); wait for it to "
                        "finish or end it, then run again") from None
                time.sleep(2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


# -- lxc state ---------------------------------------------------------------------------------------

def _private_default_conf() -> str:
    """The host's default container config without its network lines (they name lxcbr0)."""
    try:
        host = (HOST_LXC_ETC / "default.conf").read_text().splitlines()
    except FileNotFoundError:
        host = []
    kept = [line for line in host if not line.strip().startswith("lxc.net")]
    return "\n".join(["# kubelab system suite: the host's default.conf without its network lines", *kept, ""])


def lxcpath_in_use() -> str:
    return _run("lxc-config", "lxc.lxcpath").stdout.strip()


def isolate_lxc_config() -> Path:
    """Point lxc (for this process and its children only) at LXCPATH; returns LXCPATH."""
    if lxcpath_in_use() == str(LXCPATH):
        return LXCPATH  # already done in this process
    LXCPATH.mkdir(parents=True, exist_ok=True)
    LXC_ETC.mkdir(parents=True, exist_ok=True)
    (LXC_ETC / "lxc.conf").write_text(f"lxc.lxcpath = {LXCPATH}\n")
    (LXC_ETC / "default.conf").write_text(_private_default_conf())
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise HostSetupError(f"unshare(CLONE_NEWNS) failed: {os.strerror(err)} (a threaded process cannot "
                             "move to its own mount namespace; start pytest without thread-based plugins)")
    # Private propagation first: without it the bind mount below would appear on the host too.
    _run("mount", "--make-rprivate", "/")
    _run("mount", "--bind", str(LXC_ETC), str(HOST_LXC_ETC))
    seen = lxcpath_in_use()
    if seen != str(LXCPATH):
        raise HostSetupError(f"lxc still reports lxc.lxcpath={seen} after the bind mount over {HOST_LXC_ETC}")
    return LXCPATH


# -- bridge ------------------------------------------------------------------------------------------

def host_interface(lab: Lab) -> ipaddress.IPv4Interface:
    """The host's own address on the lab's bridge: the first of the node network (the definition keeps
    it free for the host)."""
    net = lab.network.host_only_cidr
    return ipaddress.IPv4Interface(f"{net.network_address + 1}/{net.prefixlen}")


def bridge_exists(name: str) -> bool:
    return _run("ip", "link", "show", "dev", name, check=False).returncode == 0


def create_bridge(lab: Lab) -> ipaddress.IPv4Interface:
    name = lab.provider.lxc_bridge
    if not name:
        raise HostSetupError(f"lab {lab.name}: provider.lxc_bridge is not set")
    if bridge_exists(name):
        raise HostSetupError(f"bridge {name} already exists; if it is a leftover of this suite, run "
                             f"`python -m tests.system.lxchost cleanup`, else pick another provider.lxc_bridge")
    address = host_interface(lab)
    _run("ip", "link", "add", "name", name, "type", "bridge")
    _run("ip", "address", "add", str(address), "dev", name)
    _run("ip", "link", "set", "dev", name, "up")
    return address


def delete_bridge(name: str) -> None:
    if bridge_exists(name):
        _run("ip", "link", "delete", "dev", name, "type", "bridge")


# -- cleanup -----------------------------------------------------------------------------------------

def lab_containers(lab: Lab, lxcpath: Path = LXCPATH) -> list[str]:
    """Containers of this lab under lxcpath (the Vagrantfile names them `<lab name>-<node name>`)."""
    if not lxcpath.is_dir():
        return []
    names = _run("lxc-ls", "-P", str(lxcpath), "-1").stdout.split()
    return [n for n in names if n.startswith(f"{lab.name}-")]


def cleanup(lab: Lab, lxcpath: Path = LXCPATH) -> list[str]:
    """Remove every trace of the lab from the host, whatever state a run left; returns what it removed."""
    removed = []
    for name in lab_containers(lab, lxcpath):
        _run("lxc-stop", "-P", str(lxcpath), "-n", name, "-k", check=False)
        _run("lxc-destroy", "-P", str(lxcpath), "-n", name)
        removed.append(f"container {name}")
    state = LabPaths.for_lab(lab.name).state_dir
    if state.exists():
        shutil.rmtree(state)
        removed.append(f"state folder {state}")
    bridge = lab.provider.lxc_bridge
    if bridge and bridge_exists(bridge):
        delete_bridge(bridge)
        removed.append(f"bridge {bridge}")
    return removed


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "cleanup":
        print(__doc__)
        return 2
    lab = load_lab(argv[1] if len(argv) > 1 else LAB_FILE)
    try:
        with exclusive_use(wait_seconds=0):
            removed = cleanup(lab)
    except HostSetupError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("\n".join(f"removed {what}" for what in removed) or f"nothing of lab {lab.name} was left")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
