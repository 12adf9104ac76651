"""The DRA example driver (lab.yaml `dra`): our own manifests for kubernetes-sigs/dra-example-driver, valid for
the lab's Kubernetes version (kubernetes-validate, strict), and applied after Calico when the lab asks."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from deploys import files as f
from deploys.files import DEVICE_CLASS, DRIVER
from tests.deploys.labs import make_lab
from tests.deploys.planning import changes, plan
from tests.deploys.recorded_facts import cluster_facts

CP = "k8s-control-plane"


def objects(lab) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(f.dra_example_driver(lab))}


@pytest.mark.parametrize("version", ["1.36.4", "1.35.9"])
def test_every_object_is_valid_for_the_labs_kubernetes_version(version):
    lab = make_lab(kubernetes={"version": version}, dra={"example_driver": True})
    found = objects(lab)
    assert sorted(found) == ["ClusterRole", "ClusterRoleBinding", "DaemonSet", "DeviceClass", "Namespace",
                             "ServiceAccount"]
    for obj in found.values():
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_validator_refuses_a_broken_device_class():
    device_class = objects(make_lab(dra={"example_driver": True}))["DeviceClass"]
    device_class["spec"]["selectors"][0]["cel"]["expresion"] = "typo"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(device_class, "1.36.4", strict=True)


def test_the_plugin_runs_on_every_worker_and_publishes_the_labs_device_count():
    lab = make_lab(workers=3, dra={"example_driver": True, "devices_per_node": 4, "namespace": "gpus"})
    found = objects(lab)
    pod = found["DaemonSet"]["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NUM_DEVICES"] == "4"
    assert container["image"] == lab.dra.image == "registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0"
    assert container["securityContext"] == {"privileged": True}
    assert found["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert {o["metadata"].get("namespace") for o in found.values()} == {"gpus", None}
    assert pod["serviceAccountName"] == found["ServiceAccount"]["metadata"]["name"]
    (subject,) = found["ClusterRoleBinding"]["subjects"]
    assert (subject["name"], subject["namespace"]) == (pod["serviceAccountName"], "gpus")


def test_the_device_class_selects_the_drivers_devices():
    device_class = objects(make_lab(dra={"example_driver": True}))["DeviceClass"]
    assert device_class["metadata"]["name"] == DEVICE_CLASS == "gpu.example.com"
    assert device_class["spec"]["selectors"] == [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]


def test_the_driver_may_publish_its_slices_and_report_claim_status():
    rules = objects(make_lab(dra={"example_driver": True}))["ClusterRole"]["rules"]
    granted = {(group, resource): set(rule["verbs"]) for rule in rules for group in rule["apiGroups"]
               for resource in rule["resources"]}
    assert {"create", "update", "delete", "list", "watch"} <= granted[("resource.k8s.io", "resourceslices")]
    assert granted[("resource.k8s.io", "resourceclaims/status")] == {"update"}


def step(name: str) -> str:
    return name.rsplit(" | ", 1)[-1]


def test_up_applies_it_after_calico_and_before_the_joins():
    lab = make_lab(dra={"example_driver": True})
    steps = [step(n) for n in changes(plan(lab, cluster_facts(lab)))[CP]]
    assert steps.index("Apply the Calico Installation") < steps.index("Apply the DRA example driver") \
        < steps.index("Mint a join token")


def test_without_the_opt_in_nothing_is_applied():
    lab = make_lab()
    assert "Apply the DRA example driver" not in [step(n) for n in changes(plan(lab, cluster_facts(lab)))[CP]]


def test_a_second_up_changes_nothing():
    lab = make_lab(dra={"example_driver": True})
    assert all(not steps for steps in changes(plan(lab, cluster_facts(lab, finished={n.name for n in lab.nodes}))).values())
