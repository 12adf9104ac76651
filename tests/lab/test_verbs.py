"""The verbs as a user runs them: refusing bad input with a clear message, the right exit status and no change.

They run in-process (the `verb` fixture, tests/lab/conftest.py): a process per verb cost about two seconds.
"""

import sys
from pathlib import Path

import pytest

from labkit.paths import PROJECT_ROOT
from tests.lab import fake_tools as fakes


def test_malformed_lab_exits_non_zero_naming_the_field_and_changes_nothing(verb_run, tmp_path):
    bad = tmp_path / "lab.yaml"
    bad.write_text("name: brokenlab\nnodes:\n  - {name: cp, role: control-plane, ip: 192.168.56.10, cpus: 1}\n")
    proc = verb_run("up", "--lab", str(bad))
    assert proc.returncode == 2
    assert "nodes[0].cpus" in proc.stderr and "nothing was changed" in proc.stderr
    assert not (PROJECT_ROOT / ".lab" / "brokenlab").exists()


def test_missing_provider_is_one_clear_message(verb_run, tmp_path):
    # Only a fake `vagrant` on PATH: VirtualBox is missing, as on these machines.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vagrant").write_text("#!/bin/sh\necho should-not-run >&2; exit 99\n")
    (bin_dir / "vagrant").chmod(0o755)
    proc = verb_run("up", path=f"{bin_dir}:{Path(sys.executable).parent}")
    assert proc.returncode == 2
    assert "VBoxManage" in proc.stderr and "install VirtualBox" in proc.stderr
    assert "should-not-run" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_up_refuses_a_vagrant_virtualbox_pair_before_saying_it_brings_machines_up(verb_run, tmp_path):
    bin_dir = tmp_path / "bin"
    fakes.fake_vagrant_and_virtualbox(bin_dir, fakes.VAGRANT_DEBIAN, fakes.VBOX_7_1)
    proc = verb_run("up", path=f"{bin_dir}:{Path(sys.executable).parent}")
    assert proc.returncode == 2
    assert "Vagrant 2.3.4 cannot drive VirtualBox 7.1.4" in proc.stderr
    assert proc.stdout == ""  # no "==> machines: ..." first
    assert fakes.calls(bin_dir) == ["vagrant --version", "VBoxManage --version"]


def test_missing_vagrant_is_one_clear_message(verb_run, tmp_path):
    proc = verb_run("status", path=str(Path(sys.executable).parent))
    assert proc.returncode == 2
    assert "Vagrant is not installed" in proc.stderr


@pytest.mark.parametrize("verb", ["down", "snapshot", "restore", "doctor"])
def test_every_verb_validates_the_lab_first(verb_run, verb, tmp_path):
    bad = tmp_path / "lab.yaml"
    bad.write_text("name: x\nnodes: []\nbogus: 1\n")
    proc = verb_run(verb, "--lab", str(bad))
    assert proc.returncode == 2 and "bogus: unknown field" in proc.stderr


def test_package_source_override_is_validated_before_anything_runs(verb_run):
    proc = verb_run("up", "--package-source", "ftp://mirror.example/")
    assert proc.returncode == 2
    assert "kubernetes.package_source" in proc.stderr and "--package-source" in proc.stderr
