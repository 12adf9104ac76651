"""The lab definition: the default lab is valid, and each kind of bad value is refused by field name."""

import copy
import ipaddress

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, LabError, load_lab, missing_files, parse_lab, with_changes

VBOX_DEFAULT = [ipaddress.ip_network("192.168.56.0/21")]


@pytest.fixture
def data():
    return yaml.safe_load(DEFAULT_LAB_FILE.read_text())


def problems_of(data, ranges=VBOX_DEFAULT) -> list[str]:
    with pytest.raises(LabError) as err:
        parse_lab(data, "lab.yaml", allowed_ranges=ranges)
    return err.value.problems


def test_default_lab_is_the_two_vm_lab():
    lab = load_lab(allowed_ranges=VBOX_DEFAULT)
    assert [n.role for n in lab.nodes] == ["control-plane", "worker"]
    assert lab.control_plane.name == "k8s-control-plane"
    assert lab.provider.name == "virtualbox"
    assert str(lab.network.host_only_cidr) == "192.168.56.0/24"
    assert lab.kubernetes.minor == lab.kubernetes.version.rsplit(".", 1)[0]


def test_the_default_box_comes_pinned_to_a_version_with_a_virtualbox_build(data):
    assert load_lab(allowed_ranges=VBOX_DEFAULT).provider.box_version == "202510.26.0"  # lab.yaml's own pin
    del data["provider"]  # the defaults: the same box, the same pin
    provider = parse_lab(data, allowed_ranges=VBOX_DEFAULT).provider
    assert (provider.box, provider.box_version) == ("bento/ubuntu-24.04", "202510.26.0")
    data["provider"] = {"box": "generic/ubuntu2404"}  # another box: its newest version, unless pinned
    assert parse_lab(data, allowed_ranges=VBOX_DEFAULT).provider.box_version is None
    data["provider"] = {"box_version": ">= 202502"}
    assert parse_lab(data, allowed_ranges=VBOX_DEFAULT).provider.box_version == ">= 202502"


def test_more_workers_by_adding_entries(data):
    for i in range(2, 5):
        data["nodes"].append({"name": f"k8s-worker-0{i}", "role": "worker", "ip": f"192.168.56.{10 + i}"})
    lab = parse_lab(data, allowed_ranges=VBOX_DEFAULT)
    assert [w.name for w in lab.workers] == ["k8s-worker-01", "k8s-worker-02", "k8s-worker-03", "k8s-worker-04"]


def with_change(data, change):
    changed = copy.deepcopy(data)
    change(changed)
    return changed


CASES = {
    "unknown field": (lambda d: d["nodes"][0].update(colour="red"), "nodes[0].colour: unknown field"),
    "unknown top-level key": (lambda d: d.update(extra=1), "extra: unknown field"),
    "duplicate name": (lambda d: d["nodes"][1].update(name="k8s-control-plane"), "nodes[1].name: 'k8s-control-plane' is already used"),
    "duplicate ip": (lambda d: d["nodes"][1].update(ip="192.168.56.10"), "nodes[1].ip: 192.168.56.10 is already used"),
    "ip outside host-only": (lambda d: d["nodes"][1].update(ip="10.1.2.3"), "nodes[1].ip: 10.1.2.3 is outside network.host_only_cidr"),
    "host's own address": (lambda d: d["nodes"][1].update(ip="192.168.56.1"), "nodes[1].ip: 192.168.56.1 is reserved"),
    "range VirtualBox refuses": (lambda d: (d["network"].update(host_only_cidr="172.28.0.0/24"),
                                           d["nodes"][0].update(ip="172.28.0.10"), d["nodes"][1].update(ip="172.28.0.11")),
                                 "network.host_only_cidr: VirtualBox refuses 172.28.0.0/24"),
    "pod cidr overlaps nodes": (lambda d: d["network"].update(pod_cidr="192.168.0.0/16"),
                                "network.pod_cidr: 192.168.0.0/16 overlaps network.host_only_cidr"),
    "service overlaps pods": (lambda d: d["network"].update(service_cidr="10.244.0.0/20"),
                              "network.service_cidr: 10.244.0.0/20 overlaps network.pod_cidr"),
    "pods in VirtualBox's NAT network": (lambda d: d["network"].update(pod_cidr="10.0.0.0/16"),
                                         ("network.pod_cidr: 10.0.0.0/16 overlaps 10.0.2.0/24, the network of every "
                                         "VirtualBox VM's NAT adapter")),
    "services in VirtualBox's NAT network": (lambda d: d["network"].update(service_cidr="10.0.0.0/12"),
                                             "network.service_cidr: 10.0.0.0/12 overlaps 10.0.2.0/24"),
    "control plane 1 cpu": (lambda d: d["nodes"][0].update(cpus=1), "nodes[0].cpus: the control plane needs at least 2 CPUs"),
    "control plane 1 GB": (lambda d: d["nodes"][0].update(memory_mb=1024), "nodes[0].memory_mb: the control plane needs at least 2048 MB"),
    "no control plane": (lambda d: d["nodes"][0].update(role="worker"), "nodes: exactly one node needs role: control-plane (found 0"),
    "two control planes": (lambda d: d["nodes"][1].update(role="control-plane"), "(found 2: k8s-control-plane, k8s-worker-01)"),
    "bad role": (lambda d: d["nodes"][1].update(role="master"), "nodes[1].role:"),
    "bad node name": (lambda d: d["nodes"][1].update(name="Worker_1"), "nodes[1].name: 'Worker_1' must be a DNS label"),
    "bad ip": (lambda d: d["nodes"][1].update(ip="192.168.56.300"), "nodes[1].ip:"),
    "bad version": (lambda d: d["kubernetes"].update(version="1.34"), "kubernetes.version: '1.34' is not a Kubernetes version"),
    "unquoted version": (lambda d: d["kubernetes"].update(version=1.34), "kubernetes.version:"),
    "old version": (lambda d: d["kubernetes"].update(version="1.20.1"), "older than 1.28"),
    "bad calico": (lambda d: d["cni"].update(calico_version="3.30"), "cni.calico_version: '3.30' is not a Calico release tag"),
    "missing nodes": (lambda d: d.pop("nodes"), "nodes: required field is missing"),
    "lxc without bridge": (lambda d: d["provider"].update(name="lxc"), "provider.lxc_bridge:"),
    "negative request": (lambda d: d["scheduler"].update(cpu_request="-100m"), "scheduler.cpu_request: '-100m' is negative"),
    "malformed request": (lambda d: d["scheduler"].update(memory_request="12 GB"), "scheduler.memory_request: '12 GB' is not a quantity"),
    "bad scheduler name": (lambda d: d["scheduler"].update(name="My_Scheduler"), "scheduler.name: 'My_Scheduler' must be a DNS label"),
    "old high_speed_nodes": (lambda d: d["placement"].update(high_speed_nodes=["k8s-worker-01"]),
                             "placement: high_speed_nodes is replaced by the scenarios' own node selectors"),
    "unknown scheduler mode": (lambda d: d["scheduler"].update(mode="webhook"),
                               "scheduler.mode: Input should be 'standalone' or 'extender'"),
    "extender weight 0": (lambda d: d["scheduler"]["extender"].update(weight=0),
                          "scheduler.extender.weight: Input should be greater than or equal to 1"),
    "extender timeout without unit": (lambda d: d["scheduler"]["extender"].update(http_timeout="5"),
                                      "scheduler.extender.http_timeout: '5' is not a duration"),
    "extender timeout zero": (lambda d: d["scheduler"]["extender"].update(http_timeout="0s"),
                              "scheduler.extender.http_timeout: '0s' is not a positive duration"),
    "extender on kube-scheduler's port": (lambda d: d["scheduler"]["extender"].update(port=10259),
                                          "scheduler.extender.port: 10259 is kube-scheduler's own secure port"),
    "extender privileged port": (lambda d: d["scheduler"]["extender"].update(port=80),
                                 "scheduler.extender.port: Input should be greater than or equal to 1024"),
    "extender unknown field": (lambda d: d["scheduler"]["extender"].update(url="http://x"),
                               "scheduler.extender.url: unknown field"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_value_is_named(data, case):
    change, expected = CASES[case]
    problems = problems_of(with_change(data, change))
    assert any(expected in p for p in problems), problems


def test_custom_vbox_range_is_honoured(data):
    changed = with_change(data, CASES["range VirtualBox refuses"][0])
    parse_lab(changed, allowed_ranges=[*VBOX_DEFAULT, ipaddress.ip_network("172.16.0.0/12")])


def test_lxc_lab_may_use_any_private_range(data):
    changed = with_change(data, CASES["range VirtualBox refuses"][0])
    changed["provider"].update(name="lxc", lxc_bridge="kubelab0")
    assert parse_lab(changed, allowed_ranges=VBOX_DEFAULT).provider.name == "lxc"


def test_every_problem_is_reported_at_once(data):
    def two_faults(d):
        d["nodes"][1]["ip"] = "192.168.56.10"
        d["network"]["pod_cidr"] = "192.168.56.0/22"
    problems = problems_of(with_change(data, two_faults))
    assert len(problems) >= 2


def test_yaml_syntax_error_names_the_line(tmp_path):
    bad = tmp_path / "lab.yaml"
    bad.write_text("name: x\nnodes: [\n")
    with pytest.raises(LabError) as err:
        load_lab(bad)
    assert str(bad) in str(err.value) and "line" in err.value.problems[0]


def test_missing_file_says_how_to_fix(tmp_path):
    with pytest.raises(LabError, match="file not found"):
        load_lab(tmp_path / "nope.yaml")


def test_not_a_mapping():
    assert "expected a mapping" in problems_of(["a", "b"])[0]


def test_with_changes_revalidates(data):

    lab = parse_lab(data, allowed_ranges=VBOX_DEFAULT)
    mirror = with_changes(lab, {"kubernetes.package_source": "file:///srv/kube-debs/"})
    assert mirror.kubernetes.package_url == "file:///srv/kube-debs/"
    assert lab.kubernetes.package_source != mirror.kubernetes.package_source  # the original is untouched
    with pytest.raises(LabError, match="network.pod_cidr"):
        with_changes(lab, {"network.pod_cidr": "192.168.56.0/24"})


def test_extender_mode_and_its_defaults(data):
    data["scheduler"]["mode"] = "extender"
    del data["scheduler"]["extender"]
    lab = parse_lab(data, allowed_ranges=VBOX_DEFAULT)
    assert lab.scheduler.mode == "extender"
    assert lab.scheduler.extender.model_dump() == {"weight": 1, "http_timeout": "5s", "node_cache_capable": True,
                                                   "ignorable": False, "port": 8888}


def test_standalone_is_the_default_mode(data):
    del data["scheduler"]["mode"]
    assert parse_lab(data, allowed_ranges=VBOX_DEFAULT).scheduler.mode == "standalone"


def test_paths_in_the_definition_start_from_the_lab_files_folder(tmp_path, data):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "scenarios.yaml").write_text("scenarios: []\n")
    data["placement"] = {"scenarios": ["mine/scenarios.yaml", "gone.yaml"]}
    data["scheduler"]["plugins"] = ["./mine", "./gone_plugin", "an.installed.module"]
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(data))
    lab = load_lab(lab_file)
    assert lab.path("mine/scenarios.yaml") == tmp_path / "mine" / "scenarios.yaml"
    assert missing_files(lab) == [
        (f"scheduler.plugins[1]: no folder ./gone_plugin (looked in {tmp_path}, the lab file's folder); give a "
         "plugin folder's path relative to it"),
        (f"placement.scenarios[1]: no file gone.yaml (looked in {tmp_path}, the lab "
         "file's folder); give a scenarios file's path relative to it")]
    assert with_changes(lab, {"scheduler.replicas": 2}).base_dir == tmp_path  # kept across changes


def test_the_default_lab_names_files_that_are_there():
    lab = load_lab(DEFAULT_LAB_FILE)
    assert lab.placement.scenarios and missing_files(lab) == []
