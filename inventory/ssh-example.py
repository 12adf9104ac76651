"""Example inventory for real machines over SSH (no Vagrant): the same deploys, your own hosts.

Copy this file, point it at your machines, then run the same `up` as for the Vagrant lab, without Vagrant:

    KUBELAB_SSH_USER=ubuntu KUBELAB_SSH_KEY=~/.ssh/id_ed25519 \
        ./lab up --lab my-lab.yaml --inventory inventory/my-machines.py

`up --inventory` skips the machines step and provisions these hosts over SSH (it sets KUBELAB_FILE to the
lab definition it was given, which this file reads).

Each lab node is reached at its `ip` from the lab definition unless KUBELAB_SSH_HOST_<NODE> (node name
upper-cased, '-' as '_') names another address, e.g. KUBELAB_SSH_HOST_K8S_WORKER_01=10.0.0.21.
The machines need Debian 12 or Ubuntu 22.04/24.04, a user with passwordless sudo (or root), and either
internet access to pkgs.k8s.io and the Calico manifests, or a mirror set in the lab definition
(kubernetes.package_source / package_key_url, cni.manifests_url). The `ip` of each node must be
the address the nodes use to reach each other: kubelet --node-ip, the API server's advertise address and
Calico's address autodetection are all derived from it.

pyinfra reads every list in this module as an inventory group: `control_plane` and `workers`.
"""

import os

from labdef.lab import load_lab
from labkit.inventory import group_of, node_data

_lab = load_lab(os.environ.get("KUBELAB_FILE"))
_user = os.environ.get("KUBELAB_SSH_USER", "ubuntu")
_key = os.environ.get("KUBELAB_SSH_KEY")


def _host(node):
    env_name = "KUBELAB_SSH_HOST_" + node.name.upper().replace("-", "_")
    data = {
        **node_data(_lab, node),
        "ssh_hostname": os.environ.get(env_name, str(node.ip)),
        "ssh_user": _user,
        "_sudo": _user != "root",
    }
    if _key:
        data["ssh_key"] = os.path.expanduser(_key)
    return (node.name, data)


control_plane = [_host(n) for n in _lab.nodes if group_of(n) == "control_plane"]
workers = [_host(n) for n in _lab.nodes if group_of(n) == "workers"]
