"""`./lab --version` (labkit.version): the project's version and the lab definition's pinned versions."""

import importlib.metadata

from labdef.lab import DEFAULT_LAB_FILE
from labkit.version import main


def test_version_names_the_project_and_the_labs_pins(tmp_path, capsys):
    lab = tmp_path / "lab.yaml"
    lab.write_text(DEFAULT_LAB_FILE.read_text().replace("# version: 2.2.1-0ubuntu1~24.04.3", "version: 2.2.1-0ubuntu1"))
    assert main(["--lab", str(lab)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"kubelab {importlib.metadata.version('kubelab')}"
    assert "  kubernetes  1.36.4 (packages 1.36.4-1.1; upstream patches 1.36 until 2027-06-28)" in out
    assert "  calico      v3.32.1" in out
    assert "  containerd  2.2.1-0ubuntu1" in out
    assert "  box         bento/ubuntu-24.04 (version 202510.26.0)" in out


def test_unpinned_containerd_says_so_with_the_floor(capsys):
    assert main(["--lab", str(DEFAULT_LAB_FILE)]) == 0
    out = capsys.readouterr().out
    assert "containerd  the distribution's containerd package (unpinned; Kubernetes 1.36 needs" in out


def test_a_bad_lab_still_prints_the_project_version_and_names_the_field(tmp_path, capsys):
    bad = tmp_path / "lab.yaml"
    bad.write_text("name: x\nnodes: []\nbogus: 1\n")
    assert main(["--lab", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("kubelab ")
    assert "bogus: unknown field" in captured.err
