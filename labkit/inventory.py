"""The pyinfra inventory of a lab: its nodes as hosts, in groups `control_plane` and `workers`.

Each host is named after its node and carries as host data:
- `node`: that node's entry of the lab definition (name, role, ip, cpus, memory_mb),
- `lab`: the whole validated lab definition as plain data (what templates and deploys read),
- the SSH details Vagrant reported (`ssh_hostname`, `ssh_port`, `ssh_user`, `ssh_key`), and the lab's own
  known_hosts file with `accept-new`: the driver empties that file whenever machines are re-created, so a
  rebuilt VM's new host key on a reused forwarded port never trips the connection.

`inventory/lab.py` exposes this to the pyinfra CLI; `pyinfra_inventory()` builds the same for the API.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyinfra.api import Inventory

from labdef.errors import UserError
from labdef.lab import Lab, Node
from labkit.paths import LabPaths
from labkit.vagrant import SshDetails

Groups = dict[str, list[tuple[str, dict]]]


class InventoryMissing(UserError):
    """The lab's machines have no recorded SSH details yet."""


def node_data(lab: Lab, node: Node) -> dict:
    """The host data every deploy reads, whatever the connection: `node` and `lab` as plain data."""
    return {"node": node.model_dump(mode="json"), "lab": lab.model_dump(mode="json")}


def group_of(node: Node) -> str:
    return "control_plane" if node.role == "control-plane" else "workers"


def lab_groups(lab: Lab, ssh: dict[str, SshDetails], known_hosts: Path) -> Groups:
    groups: Groups = {"control_plane": [], "workers": []}
    for node in lab.nodes:
        try:
            details = ssh[node.name]
        except KeyError:
            raise InventoryMissing(
                f"no SSH details for node {node.name!r}: is its machine up? Run ./lab up") from None
        data = {
            **node_data(lab, node),
            "ssh_hostname": details.host,
            "ssh_port": details.port,
            "ssh_user": details.user,
            "ssh_key": details.key_file,
            "ssh_known_hosts_file": str(known_hosts),
            "ssh_strict_host_key_checking": "accept-new",
        }
        groups[group_of(node)].append((node.name, data))
    return groups


def load_ssh_details(paths: LabPaths) -> dict[str, SshDetails]:
    try:
        raw = json.loads(paths.ssh_details.read_text())
    except FileNotFoundError:
        raise InventoryMissing(
            f"{paths.ssh_details} does not exist: the lab's machines were never brought up. Run ./lab up"
        ) from None
    return {name: SshDetails(**fields) for name, fields in raw.items()}


def recorded_groups(lab: Lab) -> Groups:
    """Groups for a lab whose machines `./lab up` has brought up (SSH details recorded on disk)."""
    paths = LabPaths.for_lab(lab.name)
    return lab_groups(lab, load_ssh_details(paths), paths.known_hosts)


def pyinfra_inventory(groups: Groups) -> Inventory:
    names = [name for hosts in groups.values() for name, _ in hosts]
    return Inventory((names, {}), **{group: (hosts, {}) for group, hosts in groups.items()})
