"""Real machines over SSH: the lxc lab provisioned through inventory/ssh-example.py, without Vagrant's details.

The README promises that the deploys provision machines that are not Vagrant VMs, from an inventory file
like inventory/ssh-example.py. Here that very file is loaded the way `./lab up --inventory FILE` loads it
(pyinfra's CLI inventory loader, in a subprocess because it patches the process with gevent), with what a
user sets for real machines: KUBELAB_SSH_USER, KUBELAB_SSH_KEY (one key of the user's own, authorised on
both machines by the test) and each node reached at its `ip` from the lab definition. Nothing of Vagrant's
is used on that path: not its recorded SSH details (per-machine keys), nor the lab's own known_hosts; host
keys go to the known_hosts under HOME (a fresh folder, so the user's own file is never touched).

The machines are re-created first (`down`, then `up --no-provision`): earlier modules of the session
provision them over the Vagrant path, and this test must start from bare machines. Then:
1. the SSH path provisions both machines (a real `labkit.provision.run`, readiness wait off as in
   test_provision.py): node prep changes both, `kubeadm init` runs once on the control plane and the
   token it minted reaches the worker's `kubeadm join`, which runs once;
2. a second SSH-path run changes nothing;
3. the Vagrant path's run (the lab's recorded SSH details, as `./lab up` provisions) changes nothing on the
   machines the SSH path provisioned: every file, package, held version and kubeadm step it would make is
   already there, so both paths leave the nodes in the same state.

STAND-IN: kubeadm, kubelet and kubectl, as in test_provision.py (see its docstring and
tests/system/provisioning.py; the Calico manifests are the real release files): this proves the
orchestration over SSH, not a real cluster.
Test setup that is not the product: the apt relay, the extra swap line, the authorised test key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from deploys import files as f
from labdef.lab import Lab
from labkit.inventory import pyinfra_inventory
from labkit.paths import PROJECT_ROOT
from labkit.provision import ProvisionReport, run
from tests.system.conftest import TIMINGS, RunningLab, run_logged
from tests.system.provisioning import local_sources, on, prepare_machines

pytestmark = pytest.mark.system

SSH_EXAMPLE = PROJECT_ROOT / "inventory" / "ssh-example.py"
STANDIN_STATE = "/var/lib/kubeadm-standin"

# One SSH-path run, as `./lab up --inventory inventory/ssh-example.py` makes it (readiness wait off: the
# stand-in kubelet never makes a node Ready). Prints the hosts' connection data and the report as JSON.
SSH_PATH_RUN = """
import json, os
from labdef.lab import load_lab
from labkit.provision import run
from labkit.pyinfra_run import load_inventory

inventory = load_inventory(os.environ["SSH_INVENTORY"])
hosts = {h.name: {k: h.data.get(k) for k in ("ssh_hostname", "ssh_user", "ssh_key", "ssh_known_hosts_file")}
         for h in inventory}
lines = []
report = run(load_lab(os.environ["KUBELAB_FILE"]), inventory, wait_ready=False, echo=lines.append)
print(json.dumps({"hosts": hosts, "changes": report.changes, "joined": report.joined,
                  "kubeconfig": str(report.kubeconfig), "lines": lines}))
"""


@dataclass
class SshRuns:
    lab: Lab
    key: Path
    home: Path
    ssh: list[dict] = field(default_factory=list)  # the SSH path's two runs, as SSH_PATH_RUN printed them
    vagrant: ProvisionReport | None = None  # the Vagrant path's run afterwards


def authorize_key(lxc_lab: RunningLab, folder: Path) -> Path:
    """A key of the user's own, authorised for `vagrant` on every machine (real machines have one already)."""
    key = folder / "id_ed25519"
    run_logged(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kubelab-systest", "-f", str(key)],
               "ssh-keygen", timeout=30)
    public = key.with_suffix(".pub").read_text().strip()
    for host in lxc_lab.pyinfra_state().inventory:
        ok, output = host.run_shell_command(f"echo '{public}' >> ~/.ssh/authorized_keys")
        assert ok, f"{host.name}: authorising the test key failed: {output.stderr}"
    return key


def ssh_path_run(env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", SSH_PATH_RUN], check=False, capture_output=True, text=True,
                          cwd=PROJECT_ROOT, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(lxc_lab: RunningLab, tmp_path_factory) -> SshRuns:
    started = time.monotonic()
    lxc_lab.verb("down")
    lxc_lab.verb("up", "--no-provision")
    TIMINGS["ssh inventory: machines re-created"] = time.monotonic() - started
    work = tmp_path_factory.mktemp("ssh-inventory")
    with local_sources(lxc_lab, work / "served") as sources:
        prepare_machines(lxc_lab, sources.relay)
        lab_file = work / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(sources.lab.model_dump(mode="json"), sort_keys=False))
        home = work / "home"
        (home / ".ssh").mkdir(parents=True, mode=0o700)
        result = SshRuns(sources.lab, authorize_key(lxc_lab, work), home)
        env = dict(lxc_lab.env, KUBELAB_FILE=str(lab_file), SSH_INVENTORY=str(SSH_EXAMPLE), HOME=str(home),
                   KUBELAB_SSH_USER="vagrant", KUBELAB_SSH_KEY=str(result.key))
        for attempt in ("first", "second"):
            started = time.monotonic()
            result.ssh.append(ssh_path_run(env))
            TIMINGS[f"ssh inventory: {attempt} run"] = time.monotonic() - started
        started = time.monotonic()
        result.vagrant = run(sources.lab, pyinfra_inventory(lxc_lab.groups()), wait_ready=False, echo=lambda _: None)
        TIMINGS["ssh inventory: the Vagrant path's run after it"] = time.monotonic() - started
        yield result


@pytest.fixture(scope="module")
def ssh(runs: SshRuns, lxc_lab: RunningLab):
    return lxc_lab.pyinfra_state()


def test_hosts_are_reached_at_their_lab_address_with_the_users_key(runs: SshRuns, lxc_lab: RunningLab):
    recorded = {name: data["ssh_key"] for hosts in lxc_lab.groups().values() for name, data in hosts}
    for node in runs.lab.nodes:
        host = runs.ssh[0]["hosts"][node.name]
        assert (host["ssh_hostname"], host["ssh_user"], host["ssh_key"]) == (str(node.ip), "vagrant", str(runs.key))
        assert host["ssh_key"] != recorded[node.name]  # not Vagrant's per-machine key
        assert host["ssh_known_hosts_file"] is None  # pyinfra's default, ~/.ssh/known_hosts
    known = (runs.home / ".ssh" / "known_hosts").read_text()
    assert all(str(node.ip) in known for node in runs.lab.nodes)


def test_ssh_path_provisions_bare_machines_init_once_join_once(runs: SshRuns, ssh):
    """Against the STAND-IN kubeadm (see the module docstring)."""
    first = runs.ssh[0]
    cp, (worker,) = runs.lab.control_plane.name, [n.name for n in runs.lab.workers]
    assert set(first["changes"]) == {cp, worker}
    assert first["joined"] == [worker]
    assert on(ssh, cp, f"cat {STANDIN_STATE}/invocations").splitlines() == [
        f"init --config {f.KUBEADM_INIT_CONFIG}", "token create --ttl 1h --print-join-command"]
    assert on(ssh, worker, f"cat {STANDIN_STATE}/invocations").splitlines() == [
        f"join --config {f.KUBEADM_JOIN_CONFIG}"]
    (token,) = on(ssh, cp, f"cat {STANDIN_STATE}/tokens").split()
    assert on(ssh, worker, f"cat {STANDIN_STATE}/joined-with-token").strip() == token
    exported = yaml.safe_load(Path(first["kubeconfig"]).read_text())
    assert exported["clusters"][0]["cluster"]["server"] == f"https://{runs.lab.control_plane.ip}:6443"


def test_second_ssh_run_and_the_vagrant_path_change_nothing(runs: SshRuns, ssh):
    second = runs.ssh[1]
    assert (second["changes"], second["joined"]) == ({}, [])
    assert "no changes" in second["lines"]
    assert (runs.vagrant.changes, runs.vagrant.joined) == ({}, [])
    cp, worker = runs.lab.control_plane.name, runs.lab.workers[0].name
    assert len(on(ssh, cp, f"cat {STANDIN_STATE}/invocations").splitlines()) == 2
    assert len(on(ssh, worker, f"cat {STANDIN_STATE}/invocations").splitlines()) == 1
