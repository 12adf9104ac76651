"""`./lab doctor`'s checks that depend on the lab and the host, with the host's parts pointed at tmp dirs."""

import yaml

from labdef.lab import DEFAULT_LAB_FILE, parse_lab
from labkit import doctor


def lxc_lab(bridge="kubelab-doc0"):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["provider"] = {"name": "lxc", "box": "kubelab/debian12-lxc", "lxc_bridge": bridge}
    return parse_lab(data)


def test_lxc_bridge_missing_fails_with_the_commands_to_make_it(tmp_path):
    (check,) = doctor.check_network(lxc_lab(), sys_class_net=tmp_path)
    assert check.verdict == doctor.FAIL
    assert "no bridge kubelab-doc0" in check.detail and "ip link add kubelab-doc0 type bridge" in check.detail


def test_lxc_bridge_present_passes(tmp_path):
    (tmp_path / "kubelab-doc0").mkdir()
    (check,) = doctor.check_network(lxc_lab(), sys_class_net=tmp_path)
    assert check.verdict == doctor.OK


def test_host_memory_below_the_lab_fails(monkeypatch):
    lab = parse_lab(yaml.safe_load(DEFAULT_LAB_FILE.read_text()))
    monkeypatch.setattr(doctor, "_host_memory_mb", lambda: 4096)
    memory = next(c for c in doctor.check_host_size(lab) if c.name == "host memory")
    assert memory.verdict == doctor.FAIL and "6144 MB" in memory.detail
