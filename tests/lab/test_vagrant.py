"""The Vagrant driver's pieces that need no machine: SSH details, tool checks, and `vagrant validate`."""

import json
import os
import shutil
import subprocess

import pytest
import yaml
from packaging.version import Version

from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit.lifecycle import bring_up_machines
from labkit.paths import PROJECT_ROOT
from labkit.vagrant import (
    ToolMissing,
    ToolsMismatch,
    VagrantLab,
    check_virtualbox_pair,
    parse_ssh_config,
    require_tools,
    vagrant_version,
    virtualbox_version,
)
from tests.lab import fake_tools as fakes
from tests.unavailable import skip_or_fail

# What `vagrant ssh-config` prints for a two-machine VirtualBox lab (Vagrant 2.3).
SSH_CONFIG = """\
Host k8s-control-plane
  HostName 127.0.0.1
  User vagrant
  Port 2222
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  PasswordAuthentication no
  IdentityFile /home/u/lab/.lab/schedlab/vagrant/machines/k8s-control-plane/virtualbox/private_key
  IdentitiesOnly yes
  LogLevel FATAL
  PubkeyAcceptedKeyTypes +ssh-rsa
  HostKeyAlgorithms +ssh-rsa

Host k8s-worker-01
  HostName 127.0.0.1
  User vagrant
  Port 2200
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  PasswordAuthentication no
  IdentityFile "/home/u/my lab/private_key"
  IdentityFile /home/u/.vagrant.d/insecure_private_key
  IdentitiesOnly yes
"""


def test_ssh_config_gives_each_machine_its_port_and_key():
    details = parse_ssh_config(SSH_CONFIG)
    assert set(details) == {"k8s-control-plane", "k8s-worker-01"}
    cp, worker = details["k8s-control-plane"], details["k8s-worker-01"]
    assert (cp.host, cp.port, cp.user) == ("127.0.0.1", 2222, "vagrant")
    assert cp.key_file.endswith("k8s-control-plane/virtualbox/private_key")
    assert worker.port == 2200
    assert worker.key_file == "/home/u/my lab/private_key"  # quoted path, first IdentityFile wins


def test_ssh_config_without_hostname_is_an_error():
    from labkit.vagrant import VagrantFailed

    with pytest.raises(VagrantFailed, match="no 'hostname'"):
        parse_ssh_config("Host a\n  User vagrant\n  IdentityFile /k\n")


def test_missing_vagrant_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="Vagrant is not installed.*install Vagrant"):
        require_tools("virtualbox")


def test_missing_virtualbox_says_what_to_install(monkeypatch, tmp_path):
    fake = tmp_path / "vagrant"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="no `VBoxManage`.*install VirtualBox"):
        require_tools("virtualbox")


@pytest.mark.parametrize(("output", "version"), [
    (fakes.VAGRANT_DEBIAN, "2.3.4"), ("Vagrant 2.4.10.dev", "2.4.10.dev0"), ("vagrant: command failed", None)])
def test_vagrant_version_from_its_real_output(output, version):
    assert str(vagrant_version(output)) == str(version)


@pytest.mark.parametrize(("output", "version"), [
    (fakes.VBOX_7_1, "7.1.4"), (fakes.VBOX_7_0_UBUNTU, "7.0.16"), (fakes.VBOX_7_1_NO_DRIVER, "7.1.4"),
    ("", None)])
def test_virtualbox_version_from_its_real_output(output, version):
    assert str(virtualbox_version(output)) == str(version)


@pytest.mark.parametrize(("vagrant", "virtualbox", "needed"), [
    ("2.3.4", "7.1.4", "2.4.2"), ("2.4.1", "7.1.0", "2.4.2"), ("2.4.8", "7.2.6", "2.4.9"),
    ("2.4.3", "7.3.0", "2.4.9")])
def test_pairs_vagrant_cannot_drive_are_refused(vagrant, virtualbox, needed):
    with pytest.raises(ToolsMismatch) as err:
        check_virtualbox_pair(Version(vagrant), Version(virtualbox))
    message = str(err.value)
    assert f"Vagrant {vagrant} cannot drive VirtualBox {virtualbox}" in message
    assert f"needs Vagrant {needed} or later" in message
    assert "https://developer.hashicorp.com/vagrant/install" in message


@pytest.mark.parametrize(("vagrant", "virtualbox"), [
    ("2.3.4", "7.0.16"), ("2.3.4", "6.1.50"), ("2.4.2", "7.1.4"), ("2.4.9", "7.2.6"), ("2.4.10.dev", "7.2.0")])
def test_pairs_vagrant_drives_pass(vagrant, virtualbox):
    assert check_virtualbox_pair(Version(vagrant), Version(virtualbox)) == ""


def test_a_virtualbox_newer_than_known_is_a_warning():
    warning = check_virtualbox_pair(Version("2.4.9"), Version("7.3.0"))
    assert "VirtualBox 7.3.0 is newer than the pairs kubelab knows" in warning


def test_up_refuses_debians_vagrant_with_virtualbox_7_1_before_creating_anything(monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    fakes.fake_vagrant_and_virtualbox(bin_dir, fakes.VAGRANT_DEBIAN, fakes.VBOX_7_1)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(ToolsMismatch, match=r"Vagrant 2\.3\.4 cannot drive VirtualBox 7\.1\.4: .* 2\.4\.2 or later"):
        bring_up_machines(load_lab(DEFAULT_LAB_FILE), DEFAULT_LAB_FILE)
    assert fakes.calls(bin_dir) == ["vagrant --version", "VBoxManage --version"]  # no status, no up


def test_each_lab_keeps_its_own_vagrant_state():
    lab = load_lab(DEFAULT_LAB_FILE)
    env = VagrantLab(lab, DEFAULT_LAB_FILE).env
    assert env["VAGRANT_DOTFILE_PATH"] == str(PROJECT_ROOT / ".lab" / lab.name / "vagrant")
    assert env["KUBELAB_FILE"] == str(DEFAULT_LAB_FILE)


def _vagrant_or_skip():
    if not shutil.which("vagrant"):
        skip_or_fail("vagrant is not installed on this machine")


def _validate(lab_file, tmp_path):
    env = dict(os.environ, KUBELAB_FILE=str(lab_file), VAGRANT_DOTFILE_PATH=str(tmp_path / "vagrant"))
    return subprocess.run(["vagrant", "validate"], check=False, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)


def test_vagrant_validates_the_default_lab(tmp_path):
    _vagrant_or_skip()
    proc = _validate(DEFAULT_LAB_FILE, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "validated successfully" in proc.stdout


def test_vagrantfile_refuses_a_malformed_lab_with_the_field(tmp_path):
    _vagrant_or_skip()
    bad = tmp_path / "lab.yaml"
    bad.write_text(DEFAULT_LAB_FILE.read_text().replace("cpus: 2", "cpus: 1", 1))
    proc = _validate(bad, tmp_path)
    assert proc.returncode != 0
    assert "nodes[0].cpus" in proc.stderr


def _ruby_or_skip():
    if not shutil.which("ruby"):
        skip_or_fail("ruby (comes with Vagrant) is not installed on this machine")


def _flatten(calls: list, out: dict) -> dict:
    """Setter calls of a recorded Vagrantfile block as {"vm.provider.cpus": 2, ...} (the define prefix cut)."""
    for call in calls:
        if "set" in call:
            out[call["set"].removeprefix("vm.define.")] = call["value"]
        elif "call" in call:
            out.setdefault(call["call"].removeprefix("vm.define."), []).append([*call["args"], call["kwargs"]])
        elif "block" in call:
            _flatten(call["calls"], out)
    return out


def vagrantfile_view(lab_data: dict, tmp_path) -> dict[str, dict]:
    """What the Vagrantfile configures per machine for this lab, read through a recording stand-in."""
    _ruby_or_skip()
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(lab_data))
    proc = subprocess.run(
        ["ruby", str(PROJECT_ROOT / "tests/lab/ruby/vagrantfile_view.rb"), str(PROJECT_ROOT / "Vagrantfile")],
        check=False, cwd=PROJECT_ROOT, env=dict(os.environ, KUBELAB_FILE=str(lab)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    calls = json.loads(proc.stdout)
    return {c["args"][0]: _flatten(c["calls"], {}) for c in calls if c.get("block") == "vm.define"}


def test_vagrantfile_defines_one_machine_per_node(tmp_path):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["nodes"].append({"name": "k8s-worker-02", "role": "worker", "ip": "192.168.56.12", "cpus": 1,
                          "memory_mb": 1536})
    view = vagrantfile_view(data, tmp_path)
    assert list(view) == ["k8s-control-plane", "k8s-worker-01", "k8s-worker-02"]
    worker = view["k8s-worker-02"]
    assert worker["vm.hostname"] == "k8s-worker-02"
    assert worker["vm.network"] == [["private_network", {"ip": "192.168.56.12", "netmask": "255.255.255.0"}]]
    assert (worker["vm.provider.cpus"], worker["vm.provider.memory"]) == (1, 1536)
    assert worker["vm.provider.linked_clone"] is True
    assert view["k8s-control-plane"]["vm.provider.memory"] == 4096


def wide_lab() -> dict:
    """A /22 host-only range with nodes in three different /24s of it."""
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["network"]["host_only_cidr"] = "192.168.56.0/22"
    data["nodes"][1]["ip"] = "192.168.57.11"
    data["nodes"].append({"name": "k8s-worker-02", "role": "worker", "ip": "192.168.59.12", "cpus": 1,
                          "memory_mb": 1536})
    return data


def test_vagrantfile_gives_each_host_only_adapter_the_labs_netmask(tmp_path):
    """Vagrant assumes 255.255.255.0 when a private network has only `ip:`: nodes of a /22 in different
    /24s would then have no route to each other."""
    view = vagrantfile_view(wide_lab(), tmp_path)
    assert [machine["vm.network"] for machine in view.values()] == [
        [["private_network", {"ip": ip, "netmask": "255.255.252.0"}]]
        for ip in ("192.168.56.10", "192.168.57.11", "192.168.59.12")]


def test_vagrant_validates_a_lab_wider_than_a_24(tmp_path):
    _vagrant_or_skip()
    lab = tmp_path / "wide.yaml"
    lab.write_text(yaml.safe_dump(wide_lab()))
    proc = _validate(lab, tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_vagrantfile_lxc_provider_uses_the_lab_bridge(tmp_path):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["provider"] = {"name": "lxc", "box": "kubelab/bookworm", "lxc_bridge": "kubelab0"}
    view = vagrantfile_view(data, tmp_path)
    worker = view["k8s-worker-01"]
    assert ["net.0.link", "kubelab0", {}] in worker["vm.provider.customize"]
    assert ["net.0.ipv4.address", "192.168.56.11/24 192.168.56.255", {}] in worker["vm.provider.customize"]
    assert worker["vm.provider.ssh_ip_addr"] == "192.168.56.11"
    assert worker["vm.provider.container_name"] == "schedlab-k8s-worker-01"
