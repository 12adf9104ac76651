"""The pyinfra inventory built from the lab definition and the SSH details Vagrant reported."""

import json
import os
import subprocess
import sys

import pytest

from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit.inventory import InventoryMissing, lab_groups, load_ssh_details, pyinfra_inventory
from labkit.paths import PROJECT_ROOT, LabPaths
from labkit.vagrant import parse_ssh_config
from tests.lab.test_vagrant import SSH_CONFIG


@pytest.fixture
def lab():
    return load_lab(DEFAULT_LAB_FILE)


def test_groups_and_host_data(lab, tmp_path):
    groups = lab_groups(lab, parse_ssh_config(SSH_CONFIG), tmp_path / "known_hosts")
    assert [name for name, _ in groups["control_plane"]] == ["k8s-control-plane"]
    assert [name for name, _ in groups["workers"]] == ["k8s-worker-01"]
    _, data = groups["workers"][0]
    assert data["ssh_port"] == 2200 and data["ssh_hostname"] == "127.0.0.1"
    assert data["node"]["ip"] == "192.168.56.11"
    assert data["lab"]["network"]["pod_cidr"] == "10.244.0.0/16"
    # A rebuilt VM's new key must not trip the connection: the lab's own file, accepting new keys.
    assert data["ssh_known_hosts_file"] == str(tmp_path / "known_hosts")
    assert data["ssh_strict_host_key_checking"] == "accept-new"


def test_pyinfra_builds_the_inventory(lab, tmp_path):
    inventory = pyinfra_inventory(lab_groups(lab, parse_ssh_config(SSH_CONFIG), tmp_path / "kh"))
    assert sorted(h.name for h in inventory) == ["k8s-control-plane", "k8s-worker-01"]
    worker = inventory.get_host("k8s-worker-01")
    assert worker.data.ssh_port == 2200
    assert worker.data.node["role"] == "worker"
    assert [h.name for h in inventory.get_group("control_plane")] == ["k8s-control-plane"]


def test_machine_without_ssh_details(lab, tmp_path):
    details = parse_ssh_config(SSH_CONFIG)
    del details["k8s-worker-01"]
    with pytest.raises(InventoryMissing, match="k8s-worker-01.*./lab up"):
        lab_groups(lab, details, tmp_path / "kh")


def test_never_brought_up(tmp_path):
    with pytest.raises(InventoryMissing, match="never brought up"):
        load_ssh_details(LabPaths(tmp_path))


def test_recorded_details_round_trip(tmp_path):
    paths = LabPaths(tmp_path)
    details = parse_ssh_config(SSH_CONFIG)
    paths.ssh_details.write_text(json.dumps({k: v.__dict__ for k, v in details.items()}))
    assert load_ssh_details(paths) == details


LOAD_SSH_EXAMPLE = """
import json
from labkit.paths import PROJECT_ROOT
from labkit.pyinfra_run import load_inventory
inventory = load_inventory(PROJECT_ROOT / "inventory" / "ssh-example.py")
print(json.dumps({
    "control_plane": [h.name for h in inventory.get_group("control_plane")],
    "hosts": {h.name: {k: h.data.get(k) for k in ("ssh_hostname", "ssh_user", "_sudo", "node", "lab")}
              for h in inventory},
}))
"""


def test_ssh_example_inventory_for_real_machines():
    """inventory/ssh-example.py, loaded the way `up --inventory` loads it: the same host data as the lab's.

    In a subprocess: pyinfra's CLI loader monkey-patches the whole process with gevent on import.
    """
    env = dict(os.environ, KUBELAB_FILE=str(DEFAULT_LAB_FILE), KUBELAB_SSH_USER="admin",
               KUBELAB_SSH_HOST_K8S_WORKER_01="10.0.0.21")
    proc = subprocess.run([sys.executable, "-c", LOAD_SSH_EXAMPLE], check=False, capture_output=True, text=True,
                          env=env, cwd=PROJECT_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded["control_plane"] == ["k8s-control-plane"]
    worker = loaded["hosts"]["k8s-worker-01"]
    assert (worker["ssh_hostname"], worker["ssh_user"], worker["_sudo"]) == ("10.0.0.21", "admin", True)
    assert worker["node"]["ip"] == "192.168.56.11"
    assert worker["lab"]["network"]["pod_cidr"] == "10.244.0.0/16"
    assert loaded["hosts"]["k8s-control-plane"]["ssh_hostname"] == "192.168.56.10"
