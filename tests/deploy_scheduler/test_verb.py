"""`invoke deploy-scheduler` as a user runs it (a subprocess in the project), without a cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "deploy-scheduler", *args], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=120)


def test_render_only_writes_the_manifests_for_review(tmp_path: Path) -> None:
    result = invoke("--render-only", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = sorted(doc["kind"] for path in (tmp_path / "out").iterdir()
                   for doc in yaml.safe_load_all(path.read_text()) if doc)
    assert kinds == sorted(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                            "ConfigMap", "Deployment"])


def test_a_lab_that_was_never_brought_up_is_refused_before_any_build(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "lab.yaml").read_text())
    data["name"] = "never-up-deploy-test"
    data["scheduler"]["plugins"] = [str(REPO / p) for p in data["scheduler"]["plugins"]]  # the lab file moved
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(data))
    result = invoke("--lab", str(lab_file))
    assert result.returncode == 2
    assert "./lab up" in result.stdout + result.stderr
    assert not (REPO / ".lab" / "never-up-deploy-test" / "images").exists()


LIST_HOSTS = """
import sys
from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit.pyinfra_run import lab_hosts
inventory = lab_hosts(load_lab(), DEFAULT_LAB_FILE, sys.argv[1])
print(sorted(h.name for h in inventory), sorted(h.name for h in inventory.get_group("workers")))
"""


def test_an_inventory_file_of_real_machines_is_read(tmp_path: Path) -> None:
    """`--inventory FILE`: pyinfra's inventory loader runs the file and yields its hosts (nothing connects).

    In a subprocess: pyinfra's CLI package monkey-patches the process (gevent) when imported.
    """
    inventory_file = tmp_path / "machines.py"
    inventory_file.write_text('control_plane = [("10.0.0.10", {"ssh_user": "ubuntu"})]\n'
                              'workers = [("10.0.0.21", {"ssh_user": "root"})]\n')
    result = subprocess.run([sys.executable, "-c", LIST_HOSTS, str(inventory_file)], cwd=REPO,
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['10.0.0.10', '10.0.0.21'] ['10.0.0.21']"


INVENTORY_READS_LAB_FILE = """
import sys
from pathlib import Path
from labdef.lab import load_lab
from labkit.pyinfra_run import lab_hosts
print([h.name for h in lab_hosts(load_lab(), Path(sys.argv[1]), sys.argv[2])])
"""


def test_an_inventory_file_reads_the_lab_definition_it_was_given(tmp_path: Path) -> None:
    """Inventory files (inventory/ssh-example.py) read the lab definition named by KUBELAB_FILE: for
    deploy-scheduler as for up, that is the one given with --lab, not lab.yaml."""
    inventory_file = tmp_path / "machines.py"
    inventory_file.write_text('import os\ncontrol_plane = [(os.environ["KUBELAB_FILE"], {"ssh_user": "root"})]\n')
    lab_file = tmp_path / "other-lab.yaml"
    result = subprocess.run([sys.executable, "-c", INVENTORY_READS_LAB_FILE, str(lab_file), str(inventory_file)],
                            cwd=REPO, capture_output=True, text=True, check=False, timeout=120,
                            env={k: v for k, v in os.environ.items() if k != "KUBELAB_FILE"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr([str(lab_file)])
