"""`./lab doctor`'s checks that depend on the lab and the host, with the host's parts pointed at tmp dirs."""

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, load_lab, parse_lab
from labkit import doctor
from tests.lab import fake_tools as fakes


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


def pair_check(monkeypatch, tmp_path, vagrant: str, virtualbox: str) -> doctor.Check:
    bin_dir = tmp_path / "bin"
    fakes.fake_vagrant_and_virtualbox(bin_dir, vagrant, virtualbox)
    monkeypatch.setenv("PATH", str(bin_dir))
    checks = {c.name: c for c in doctor.check_vagrant(load_lab(DEFAULT_LAB_FILE))}
    assert (checks["vagrant"].detail, checks["virtualbox"].detail) == (vagrant, f"VBoxManage {virtualbox}")
    return checks["vagrant + virtualbox"]


@pytest.mark.parametrize(("vagrant", "virtualbox", "refusal"), [
    (fakes.VAGRANT_DEBIAN, fakes.VBOX_7_1,
     "Vagrant 2.3.4 cannot drive VirtualBox 7.1.4: VirtualBox 7.1 needs Vagrant 2.4.2 or later"),
    (fakes.VAGRANT_2_4_8, fakes.VBOX_7_2_UBUNTU,
     "Vagrant 2.4.8 cannot drive VirtualBox 7.2.6: VirtualBox 7.2 needs Vagrant 2.4.9 or later")])
def test_a_vagrant_too_old_for_virtualbox_fails_naming_both_and_the_fix(monkeypatch, tmp_path, vagrant, virtualbox,
                                                                        refusal):
    check = pair_check(monkeypatch, tmp_path, vagrant, virtualbox)
    assert check.verdict == doctor.FAIL
    assert refusal in check.detail
    assert "https://developer.hashicorp.com/vagrant/install" in check.detail


@pytest.mark.parametrize(("vagrant", "virtualbox"), [
    (fakes.VAGRANT_DEBIAN, fakes.VBOX_7_0_UBUNTU), (fakes.VAGRANT_2_4_9, fakes.VBOX_7_2_UBUNTU)])
def test_a_pair_that_works_passes(monkeypatch, tmp_path, vagrant, virtualbox):
    assert pair_check(monkeypatch, tmp_path, vagrant, virtualbox).verdict == doctor.OK


def test_a_virtualbox_newer_than_known_is_a_warning(monkeypatch, tmp_path):
    check = pair_check(monkeypatch, tmp_path, fakes.VAGRANT_2_4_9, fakes.VBOX_7_3_HYPOTHETICAL)
    assert check.verdict == doctor.WARN and "newer than the pairs kubelab knows" in check.detail


def test_host_memory_on_macos_comes_from_sysctl(monkeypatch, tmp_path):
    """macOS has no /proc/meminfo; `sysctl -n hw.memsize` gives the bytes."""
    bin_dir = tmp_path / "bin"
    fakes.fake_tool(bin_dir, "sysctl", {"-n hw.memsize": fakes.MACOS_MEMSIZE},
                    "macOS's `sysctl -n hw.memsize` on a 16 GB Mac")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert doctor._host_memory_mb(meminfo=tmp_path / "no-proc-meminfo") == 16384
    assert fakes.calls(bin_dir) == ["sysctl -n hw.memsize"]


def test_host_memory_on_linux_comes_from_proc_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        8029876 kB\nMemFree:          123456 kB\n")
    assert doctor._host_memory_mb(meminfo=meminfo) == 7841


def test_lxc_lab_on_macos_says_it_needs_linux(tmp_path):
    (check,) = doctor.check_network(lxc_lab(), sys_class_net=tmp_path, platform="darwin")
    assert check.verdict == doctor.FAIL and "needs a Linux host" in check.detail


def test_the_plugin_folders_and_scenario_files_the_lab_names_must_be_there(tmp_path):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(data))  # copied away from the plugin folders it names
    [check] = doctor.check_lab_files(load_lab(lab_file))
    assert check.verdict == doctor.FAIL
    assert check.detail.startswith("scheduler.plugins[0]: no folder plugins/network_aware")
    assert "placement.scenarios[0]: no file plugins/network_aware/scenarios.yaml" in check.detail
    assert list(doctor.check_scheduler_plugins(load_lab(lab_file))) == []  # not loaded: named above
    [check] = doctor.check_lab_files(load_lab(DEFAULT_LAB_FILE))
    assert check.verdict == doctor.OK


def test_doctor_shows_the_feature_gates_and_runtime_config():
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["kubernetes"].update(feature_gates={"GenericWorkload": True, "GangScheduling": True},
                              runtime_config={"scheduling.k8s.io/v1alpha2": True})
    checks = {c.name: c for c in doctor.check_feature_gates(parse_lab(data))}
    assert checks["feature gates"].verdict == doctor.OK
    assert checks["feature gates"].detail.startswith(
        "GangScheduling=true,GenericWorkload=true (Kubernetes 1.36; alpha: GangScheduling, GenericWorkload)")
    assert checks["runtime config"].detail.startswith("kube-apiserver --runtime-config=scheduling.k8s.io/v1alpha2=true")
    assert list(doctor.check_feature_gates(load_lab(DEFAULT_LAB_FILE))) == []


class NodeCommands:
    """Stands in for ssh to the lab's nodes: answers crictl's inspecti and pull with the exit codes and
    output given per (node, verb); models nothing else (no real ssh, containerd or registry)."""

    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def __call__(self, node, command):
        import subprocess

        verb = command[2]
        self.asked.append((node, verb))
        code, stderr = self.answers.get((node, verb), (1, ""))
        return subprocess.CompletedProcess(command, code, "", stderr)


def dra_doctor_lab(workers=1):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["dra"] = {"example_driver": True}
    data["nodes"] += [{"name": f"k8s-worker-0{i}", "role": "worker", "ip": f"192.168.56.{10 + i}"}
                      for i in range(2, workers + 1)]
    return parse_lab(data)


def test_doctor_finds_the_dra_image_on_each_worker_or_pulls_it():
    run = NodeCommands({("k8s-worker-01", "inspecti"): (0, ""), ("k8s-worker-02", "pull"): (0, "")})
    checks = list(doctor.check_dra_image(dra_doctor_lab(workers=2), run))
    assert [(c.name, c.verdict) for c in checks] == [("dra image (k8s-worker-01)", doctor.OK),
                                                    ("dra image (k8s-worker-02)", doctor.OK)]
    assert "pulled on the node: the tag exists" in checks[1].detail
    assert ("k8s-control-plane", "inspecti") not in run.asked


def test_a_dra_image_tag_the_registry_lacks_fails_with_the_fix():
    run = NodeCommands({("k8s-worker-01", "pull"): (1, 'pulling image: ... "v0.4.0": not found')})
    (check,) = doctor.check_dra_image(dra_doctor_lab(), run)
    assert check.verdict == doctor.FAIL
    assert "could not be pulled" in check.detail and "not found" in check.detail and "dra.image" in check.detail


def test_unreachable_machines_are_a_warning_not_a_failure():
    run = NodeCommands({("k8s-worker-01", "inspecti"): (255, "ssh: connect to host 127.0.0.1 port 2222")})
    (check,) = doctor.check_dra_image(dra_doctor_lab(), run)
    assert check.verdict == doctor.WARN and "once `up` has created the machines" in check.detail
    assert list(doctor.check_dra_image(load_lab(DEFAULT_LAB_FILE), run)) == []
