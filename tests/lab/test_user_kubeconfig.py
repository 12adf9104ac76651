"""`./lab kubeconfig [--merge]`: the lab's entries merged into the user's kubeconfig, in temporary HOMEs."""

import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from deploys.kubeconfig import lab_kubeconfig
from labkit.kube import KubeconfigError
from labkit.paths import PROJECT_ROOT, LabPaths
from labkit.user_kubeconfig import MergeClash, merge, user_kubeconfig

ADMIN_CONF = """\
apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster: {server: "https://192.168.56.10:6443", certificate-authority-data: Q0E=}
users:
- name: kubernetes-admin
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
contexts:
- name: kubernetes-admin@kubernetes
  context: {cluster: kubernetes, user: kubernetes-admin}
current-context: kubernetes-admin@kubernetes
"""
THEIRS = """\
apiVersion: v1
kind: Config
clusters:
- name: work
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: me
  user: {token: abc}
contexts:
- name: work
  context: {cluster: work, user: me, namespace: team}
current-context: work
preferences: {}
"""


@pytest.fixture
def lab_config(tmp_path):
    path = tmp_path / "lab-kubeconfig"
    path.write_text(lab_kubeconfig(ADMIN_CONF, "schedlab"))
    return path


def names(config: dict, section: str) -> list[str]:
    return [entry["name"] for entry in config[section]]


def test_the_users_file_is_kubeconfigs_first_file_else_home(tmp_path):
    assert user_kubeconfig({"HOME": str(tmp_path)}) == tmp_path / ".kube" / "config"
    assert user_kubeconfig({"HOME": "/h", "KUBECONFIG": f"{os.pathsep}/a/one{os.pathsep}/b/two"}) == Path("/a/one")


def test_merge_adds_the_lab_and_leaves_every_other_entry_and_the_current_context(lab_config, tmp_path):
    target = tmp_path / "home" / ".kube" / "config"
    target.parent.mkdir(parents=True)
    target.write_text(THEIRS)
    result = merge(lab_config, target, clock=lambda: time.struct_time((2026, 11, 24, 7, 30, 0, 1, 328, 0)))
    merged = yaml.safe_load(target.read_text())
    assert names(merged, "clusters") == ["work", "schedlab"]
    assert names(merged, "users") == ["me", "schedlab-admin"]
    assert names(merged, "contexts") == ["work", "schedlab"]
    original = yaml.safe_load(THEIRS)
    for section in ("clusters", "users", "contexts"):
        assert merged[section][0] == original[section][0]
    assert merged["current-context"] == "work"
    assert result.backup == target.with_name("config.kubelab-backup-20261124-073000")
    assert result.backup.read_text() == THEIRS
    assert oct(target.stat().st_mode & 0o777) == "0o600"


def test_merge_again_changes_nothing(lab_config, tmp_path):
    target = tmp_path / "config"
    target.write_text(THEIRS)
    merge(lab_config, target)
    after_first = target.read_text()
    backups = sorted(tmp_path.glob("config.kubelab-backup-*"))
    result = merge(lab_config, target)
    assert not result.changed and result.backup is None
    assert target.read_text() == after_first
    assert sorted(tmp_path.glob("config.kubelab-backup-*")) == backups


def test_merge_into_no_file_creates_it_with_the_labs_context_current(lab_config, tmp_path):
    target = tmp_path / ".kube" / "config"
    result = merge(lab_config, target)
    assert result.backup is None
    merged = yaml.safe_load(target.read_text())
    assert merged["current-context"] == "schedlab" and names(merged, "contexts") == ["schedlab"]


def test_a_clash_is_refused_and_changes_nothing_unless_forced(lab_config, tmp_path):
    target = tmp_path / "config"
    clashing = THEIRS.replace("name: work\n  cluster", "name: schedlab\n  cluster")
    target.write_text(clashing)
    with pytest.raises(MergeClash, match=r"cluster schedlab with other content.*--force"):
        merge(lab_config, target)
    assert target.read_text() == clashing
    assert not list(tmp_path.glob("config.kubelab-*"))

    result = merge(lab_config, target, force=True)
    assert result.replaced == ["cluster schedlab"] and result.backup.read_text() == clashing
    merged = yaml.safe_load(target.read_text())
    assert merged["clusters"][0]["cluster"]["server"] == "https://192.168.56.10:6443"


def test_a_file_that_is_not_a_kubeconfig_is_refused(lab_config, tmp_path):
    target = tmp_path / "config"
    target.write_text("clusters: {a: b}\n")
    with pytest.raises(KubeconfigError, match="not a kubeconfig"):
        merge(lab_config, target)
    assert target.read_text() == "clusters: {a: b}\n"


def test_the_verb_prints_the_path_and_merges_on_request_only(verb_run, monkeypatch, tmp_path):
    """In a temporary HOME, for a lab whose kubeconfig `up` exported."""
    lab = tmp_path / "lab.yaml"
    lab.write_text((PROJECT_ROOT / "lab.yaml").read_text().replace("name: schedlab", "name: mergetest"))
    exported = LabPaths.for_lab("mergetest").kubeconfig
    exported.parent.mkdir(parents=True, exist_ok=True)
    exported.write_text(lab_kubeconfig(ADMIN_CONF, "mergetest"))
    monkeypatch.delenv("KUBECONFIG", raising=False)

    def verb(*args):
        return verb_run("kubeconfig", "--lab", str(lab), *args, env={"HOME": str(tmp_path)})

    try:
        shown = verb()
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines() == [str(exported), f"export KUBECONFIG={exported}"]
        assert not (tmp_path / ".kube").exists()
        merged = verb("--merge")
        assert merged.returncode == 0, merged.stderr
        assert "added context mergetest" in merged.stdout
        assert names(yaml.safe_load((tmp_path / ".kube" / "config").read_text()), "contexts") == ["mergetest"]
        again = verb("--merge")
        assert "nothing to do" in again.stdout
    finally:
        shutil.rmtree(exported.parent, ignore_errors=True)
