"""kubernetes.feature_gates and kubernetes.runtime_config in the lab definition: checked against the lab's
Kubernetes minor, refused by field name before anything runs."""

import copy
import ipaddress

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, LabError, parse_lab

VBOX_DEFAULT = [ipaddress.ip_network("192.168.56.0/21")]


def lab_with(**kubernetes):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["kubernetes"] = {**data["kubernetes"], **copy.deepcopy(kubernetes)}
    return parse_lab(data, "lab.yaml", allowed_ranges=VBOX_DEFAULT)


def problems(**kubernetes) -> list[str]:
    with pytest.raises(LabError) as err:
        lab_with(**kubernetes)
    assert "nothing was changed" in str(err.value)
    return err.value.problems


def test_gates_and_runtime_config_are_read():
    lab = lab_with(feature_gates={"GenericWorkload": True, "GangScheduling": True},
                   runtime_config={"scheduling.k8s.io/v1alpha2": True})
    assert lab.kubernetes.feature_gates_flag == "GangScheduling=true,GenericWorkload=true"
    assert lab.kubernetes.runtime_config_flag == "scheduling.k8s.io/v1alpha2=true"
    assert lab_with().kubernetes.feature_gates_flag == ""


def test_a_misspelt_gate_is_refused_naming_the_field_and_the_fix():
    (problem,) = problems(feature_gates={"GangSchedulng": True, "GenericWorkload": True})
    assert problem.startswith("kubernetes.feature_gates.GangSchedulng: unknown feature gate")
    assert "did you mean GangScheduling?" in problem


def test_a_gate_the_labs_minor_lacks_is_refused():
    (problem,) = problems(version="1.34.3", feature_gates={"GenericWorkload": True})
    assert problem.startswith("kubernetes.feature_gates.GenericWorkload: GenericWorkload is not a feature gate of "
                              "Kubernetes 1.34")


def test_a_locked_gate_set_away_from_its_value_is_refused():
    (problem,) = problems(feature_gates={"DynamicResourceAllocation": False})
    assert problem == ("kubernetes.feature_gates.DynamicResourceAllocation: DynamicResourceAllocation is GA and "
                       "locked to true in Kubernetes 1.36; remove it (or set it to true)")


def test_a_gate_without_the_gate_it_needs_is_refused():
    (problem,) = problems(feature_gates={"GangScheduling": True})
    assert "GangScheduling needs GenericWorkload enabled too" in problem


def test_gates_for_a_minor_without_a_table_are_refused():
    (problem, *_) = problems(version="1.37.1", feature_gates={"GenericWorkload": True})
    assert problem.startswith("kubernetes.feature_gates: no feature gate table for Kubernetes 1.37")


@pytest.mark.parametrize("key,value,message", [
    ("scheduling.k8s.io", True, "not an API kube-apiserver's --runtime-config names"),
    ("scheduling.k8s.io/v1alpha2", "yes", "'yes' is not true or false"),
])
def test_bad_runtime_config_is_refused(key, value, message):
    (problem,) = problems(runtime_config={key: value})
    assert problem.startswith(f"kubernetes.runtime_config.{key}: ") and message in problem


@pytest.mark.parametrize("key", ["v1", "api/all", "api/alpha", "resource.k8s.io/v1beta2",
                                 "scheduling.k8s.io/v1alpha2/workloads"])
def test_runtime_config_keys_kube_apiserver_takes(key):
    assert lab_with(runtime_config={key: True}).kubernetes.runtime_config == {key: True}


def dra_lab(dra, **kubernetes):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["kubernetes"] = {**data["kubernetes"], **kubernetes}
    data["dra"] = dra
    return parse_lab(data, "lab.yaml", allowed_ranges=VBOX_DEFAULT)


def test_the_dra_example_driver_is_off_unless_asked():
    assert lab_with().dra.example_driver is False
    dra = dra_lab({"example_driver": True, "devices_per_node": 4}).dra
    assert (dra.example_driver, dra.devices_per_node, dra.namespace) == (True, 4, "dra-example-driver")


@pytest.mark.parametrize("dra,kubernetes,message", [
    ({"example_driver": True}, {"version": "1.33.7"}, "dra.example_driver: needs Kubernetes 1.34 or later"),
    ({"image": "registry.k8s.io/dra-example-driver/dra-example-driver"}, {}, "dra.image: "),
    ({"devices_per_node": 0}, {}, "dra.devices_per_node: "),
    ({"example_drivers": True}, {}, "dra.example_drivers: unknown field"),
])
def test_bad_dra_settings_are_refused_by_field(dra, kubernetes, message):
    with pytest.raises(LabError) as err:
        dra_lab(dra, **kubernetes)
    assert any(problem.startswith(message) for problem in err.value.problems), err.value.problems


def test_the_dra_example_driver_needs_a_worker():
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["nodes"] = [n for n in data["nodes"] if n["role"] == "control-plane"]
    data["dra"] = {"example_driver": True}
    with pytest.raises(LabError, match="dra.example_driver: the driver runs on the workers"):
        parse_lab(data, "lab.yaml", allowed_ranges=VBOX_DEFAULT)


def test_gates_must_suit_the_labs_scheduler_too():
    # JobSuccessPolicy is a 1.35 gate gone in 1.36, the kube-scheduler minor the lab's scheduler follows.
    (problem,) = problems(version="1.35.9", feature_gates={"JobSuccessPolicy": True})
    assert problem.startswith("kubernetes.feature_gates.JobSuccessPolicy: JobSuccessPolicy is not a feature gate "
                              "of Kubernetes 1.36")
