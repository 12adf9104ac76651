"""Which lab node the current pyinfra host is, read from its inventory data, and running a command on it."""

from __future__ import annotations

from pyinfra.api import Host

from labdef.lab import Lab, Node


def node_of(lab: Lab, target: Host) -> Node:
    """The inventory gives each host `node` data ({name, ip, role}); its name is the lab node's name."""
    name = node_label(target)
    try:
        return lab.node(name)
    except KeyError:
        raise KeyError(
            f"inventory host {target.name!r} maps to node {name!r}, which is not in the lab definition's "
            "nodes; regenerate the inventory from the same lab file"
        ) from None


def node_label(target: Host) -> str:
    """The node's name from the host's `node` data (else the host's own name), without the lab definition."""
    data = target.data.get("node")
    return data["name"] if isinstance(data, dict) and "name" in data else target.name


def login_user(target: Host) -> str:
    """The account that gets ~/.kube/config: inventory `kube_user`, else the SSH user, else root."""
    return target.data.get("kube_user") or target.data.get("ssh_user") or "root"


def sudo(target: Host) -> bool:
    """Whether commands run through sudo (inventory `_sudo`); callbacks pass it on explicitly."""
    return bool(target.data.get("_sudo", False))


class CommandFailed(RuntimeError):
    """A shell command on a node exited non-zero; the message holds the command and its output."""


def run_command(target: Host, command: str, what: str) -> str:
    """Run `command` on the node (with sudo when the inventory says so) and return its stdout."""
    ok, output = target.run_shell_command(command, _sudo=sudo(target))
    if not ok:
        raise CommandFailed(f"{what} failed: `{command}`\n{output.stdout}\n{output.stderr}".rstrip())
    return output.stdout
