"""`./lab ssh` and `./lab kubectl` as a user runs them (through invoke), against a lab of the tests' own.

`ssh` here is a STAND-IN on PATH that prints the command line it was given and exits with the status the
test asks for (KUBELAB_TEST_SSH_EXIT): it models nothing of ssh itself. The real ssh to real machines is in
tests/system/test_inner_loop.py. `kubectl` is real kubectl of the lab's minor (tests/debian_testing.py) against the API test server.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploys.kubeconfig import lab_kubeconfig
from labdef.lab import DEFAULT_LAB_FILE
from labkit.paths import PROJECT_ROOT, LabPaths
from labkit.vagrant import parse_ssh_config
from tests.debian_testing import debian_testing_kubectl
from tests.lab.test_lab_script import project_copy, tools_path
from tests.lab.test_vagrant import SSH_CONFIG

LAB_NAME = "verbstest"
SSH_STANDIN = """#!/bin/sh
# STAND-IN for ssh: prints its arguments, one per line, and exits with $KUBELAB_TEST_SSH_EXIT (default 0).
for arg in "$@"; do echo "$arg"; done
exit "${KUBELAB_TEST_SSH_EXIT:-0}"
"""


@pytest.fixture
def lab_file(tmp_path) -> Path:
    """The default lab under another name, with SSH details recorded as `up` records them."""
    path = tmp_path / "lab.yaml"
    path.write_text(DEFAULT_LAB_FILE.read_text().replace("name: schedlab", f"name: {LAB_NAME}"))
    paths = LabPaths.for_lab(LAB_NAME)
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    details = parse_ssh_config(SSH_CONFIG)
    paths.ssh_details.write_text(json.dumps({name: d.__dict__ for name, d in details.items()}))
    yield path
    shutil.rmtree(paths.state_dir, ignore_errors=True)


def bin_dir(tmp_path, *tools: str) -> Path:
    """A PATH folder with the ssh stand-in and links to the named host tools."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "ssh").write_text(SSH_STANDIN)
    (folder / "ssh").chmod(0o755)
    for tool in tools:
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


def lab_verb(lab_file: Path, *args: str, path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    # Only the given tools and the virtualenv's: whether kubectl is on PATH is the test's choice.
    environ = dict(os.environ, PATH=f"{path}:{Path(sys.executable).parent}", COLUMNS="200", **(env or {}))
    environ.pop("KUBECONFIG", None)
    verb, *rest = args
    return subprocess.run([sys.executable, "-m", "invoke", verb, "--lab", str(lab_file), *rest], check=False,
                          capture_output=True, text=True, env=environ, cwd=PROJECT_ROOT, timeout=120)


def lab_script(lab_file: Path, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Through the `./lab` launcher as a user types it (a copy whose virtualenv python is the real one, run in
    this checkout), with the ssh stand-in and no kubectl on PATH; the lab file comes from $KUBELAB_FILE."""
    project = project_copy(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.write_text(f"#!/bin/sh\ncd {shlex.quote(str(PROJECT_ROOT))} && exec {shlex.quote(sys.executable)} "
                      '"$@"\n')
    (tmp_path / "launcher").mkdir()
    path = f"{bin_dir(tmp_path)}:{tools_path(tmp_path / 'launcher', 'linux')}"
    environ = {"PATH": path, "HOME": str(tmp_path), "COLUMNS": "200", "KUBELAB_FILE": str(lab_file)}
    return subprocess.run([str(project / "lab"), *args], check=False, capture_output=True, text=True, env=environ,
                          timeout=120)


def test_ssh_defaults_to_the_control_plane_with_the_labs_details(lab_file, tmp_path):
    proc = lab_verb(lab_file, "ssh", path=bin_dir(tmp_path))
    assert proc.returncode == 0, proc.stderr
    known_hosts = LabPaths.for_lab(LAB_NAME).known_hosts
    key = "/home/u/lab/.lab/schedlab/vagrant/machines/k8s-control-plane/virtualbox/private_key"
    assert proc.stdout.splitlines() == [
        "-p", "2222", "-i", key, "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "StrictHostKeyChecking=accept-new", "vagrant@127.0.0.1"]


def test_ssh_runs_a_command_on_the_node_named_and_passes_its_exit_status(lab_file, tmp_path):
    proc = lab_verb(lab_file, "ssh", "--node", "k8s-worker-01", "--", "sudo", "crictl", "images",
                    path=bin_dir(tmp_path), env={"KUBELAB_TEST_SSH_EXIT": "7"})
    assert proc.returncode == 7
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["-p", "2200"] and "/home/u/my lab/private_key" in lines
    assert lines[-4:] == ["vagrant@127.0.0.1", "sudo", "crictl", "images"]


def test_lab_ssh_node_command_as_issue_15_words_it(lab_file, tmp_path):
    proc = lab_script(lab_file, "ssh", "k8s-worker-01", "--", "sudo", "crictl", "images", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["-p", "2200"] and "/home/u/my lab/private_key" in lines
    assert lines[-4:] == ["vagrant@127.0.0.1", "sudo", "crictl", "images"]


def test_ssh_refuses_an_unknown_node_with_the_labs_nodes(lab_file, tmp_path):
    proc = lab_verb(lab_file, "ssh", "--node", "k8s-worker-09", path=bin_dir(tmp_path))
    assert proc.returncode == 2
    assert "no node 'k8s-worker-09'" in proc.stderr and "k8s-control-plane, k8s-worker-01" in proc.stderr
    assert proc.stdout == ""  # ssh never ran


def test_ssh_to_an_ssh_inventory_host(lab_file, tmp_path):
    proc = lab_verb(lab_file, "ssh", "--node", "k8s-worker-01", "--inventory", "inventory/ssh-example.py", "--",
                    "hostname", path=bin_dir(tmp_path),
                    env={"KUBELAB_SSH_USER": "admin", "KUBELAB_SSH_KEY": "/keys/id_ed25519"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["-i", "/keys/id_ed25519", "-o", "IdentitiesOnly=yes",
                                        "admin@192.168.56.11", "hostname"]


def test_kubectl_without_a_host_kubectl_runs_the_control_planes_over_ssh(lab_file, tmp_path):
    proc = lab_verb(lab_file, "kubectl", "--", "get", "pods", "-o", "jsonpath={.items[*].metadata.name}",
                    path=bin_dir(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2] == "vagrant@127.0.0.1" and "-p" in lines and lines[lines.index("-p") + 1] == "2222"
    # one word for the remote shell, quoted so it splits back into kubectl's arguments
    assert lines[-1] == ("sudo kubectl --kubeconfig /etc/kubernetes/admin.conf get pods -o "
                         "'jsonpath={.items[*].metadata.name}'")


def test_lab_kubectl_args_without_double_dash_flags_included(lab_file, tmp_path):
    proc = lab_script(lab_file, "kubectl", "-n", "kube-system", "get", "pods", "-o", "jsonpath={.items[*].spec}",
                      tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == ("sudo kubectl --kubeconfig /etc/kubernetes/admin.conf -n kube-system "
                                            "get pods -o 'jsonpath={.items[*].spec}'")


@pytest.fixture
def host_kubectl() -> str:
    """The kubectl a user of the lab would have: real kubectl of the lab's minor (tests/debian_testing.py)."""
    return debian_testing_kubectl()


@pytest.mark.api
def test_kubectl_uses_the_labs_kubeconfig_and_context(lab_file, tmp_path, kube_api, host_kubectl):
    """Real kubectl, real HTTP: the lab's exported kubeconfig (names as `up` writes them) reaches the server."""
    kube_api.add_nodes(2)
    served = tmp_path / "served-kubeconfig"
    kube_api.write_kubeconfig(str(served))
    LabPaths.for_lab(LAB_NAME).kubeconfig.write_text(lab_kubeconfig(served.read_text(), LAB_NAME))
    tools = bin_dir(tmp_path)
    (tools / "kubectl").symlink_to(host_kubectl)

    listed = lab_verb(lab_file, "kubectl", "--", "get", "nodes", "-o", "name", path=tools)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["node/node-0", "node/node-1"]
    missing = lab_verb(lab_file, "kubectl", "--", "get", "pod", "nope", path=tools)
    assert missing.returncode == 1
    assert 'pods "nope" not found' in missing.stderr


def test_kubectl_before_up_names_the_fix(lab_file, tmp_path, host_kubectl):
    tools = bin_dir(tmp_path)
    (tools / "kubectl").symlink_to(host_kubectl)
    proc = lab_verb(lab_file, "kubectl", "--", "get", "nodes", path=tools)
    assert proc.returncode == 2
    assert "no such kubeconfig" in proc.stderr and "./lab up" in proc.stderr
