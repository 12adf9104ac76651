"""`./lab ssh`: the system ssh to one lab machine, with the connection details provisioning uses.

The details come from the same pyinfra inventory `up` and `deploy-scheduler` run over (labkit.pyinfra_run.
lab_hosts): for a Vagrant lab the host, port, user and key `vagrant ssh-config` reported and the lab's own
known_hosts (accept-new), for an SSH-inventory lab whatever that inventory file sets (ssh's own defaults
for what it leaves out), so `ssh` connects exactly where the deploys do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labdef.errors import UserError
from labdef.lab import Lab


class UnknownNode(UserError):
    """The node named is not one of the lab's."""


# pyinfra host data -> ssh -o option, for the settings a pyinfra inventory can carry.
_OPTIONS = {
    "ssh_known_hosts_file": "UserKnownHostsFile",
    "ssh_strict_host_key_checking": "StrictHostKeyChecking",
}


def node_name(lab: Lab, node: str | None) -> str:
    """The node to reach: the one named, or the control plane; an unknown name is refused with the list."""
    if node is None:
        return lab.control_plane.name
    names = [n.name for n in lab.nodes]
    if node not in names:
        raise UnknownNode(f"lab {lab.name} has no node {node!r}; its nodes: {', '.join(names)}")
    return node


def ssh_argv(host_data: dict, command: Sequence[str] = ()) -> list[str]:
    """The ssh command line for one inventory host's data, running `command` (a login shell when empty).

    `command` goes to ssh as given: ssh joins its words with spaces for the remote shell, as it always does.
    """
    argv = ["ssh"]
    if port := host_data.get("ssh_port"):
        argv += ["-p", str(port)]
    if key := host_data.get("ssh_key"):
        # Only this key: an agent with many keys would otherwise exhaust the server's MaxAuthTries first.
        argv += ["-i", str(Path(key).expanduser()), "-o", "IdentitiesOnly=yes"]
    for field, option in _OPTIONS.items():
        if value := host_data.get(field):
            argv += ["-o", f"{option}={value}"]
    user = host_data.get("ssh_user")
    hostname = host_data.get("ssh_hostname")
    argv.append(f"{user}@{hostname}" if user else str(hostname))
    return [*argv, *command]


def lab_ssh_argv(lab: Lab, lab_file: Path, node: str | None, command: Sequence[str] = (),
                 inventory_file: str | None = None) -> list[str]:
    """The ssh command line to `node` (default: the control plane) of the lab or of an SSH inventory."""
    from labkit.pyinfra_run import lab_hosts  # pyinfra is slow to import: only once the node is known

    name = node_name(lab, node)
    hosts = {host.name: host for host in lab_hosts(lab, lab_file, inventory_file)}
    if name not in hosts:
        where = inventory_file or "the lab's recorded SSH details"
        raise UnknownNode(f"{where} has no host {name!r} (hosts: {', '.join(sorted(hosts))}); "
                          "name inventory hosts after the lab's nodes")
    return ssh_argv(hosts[name].data.dict(), command)
