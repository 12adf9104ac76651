"""kubernetes.feature_gates and runtime_config, rendered into kubeadm's configuration and the scheduler's pod.

The shapes checked here are kubeadm's and the kubelet's own types (kubernetes/website
content/en/docs/reference/config-api/kubeadm-config.v1beta4.md and .v1beta3.md, kubelet-config.v1beta1.md):
ClusterConfiguration's apiServer, controllerManager and scheduler are ControlPlaneComponents whose extraArgs
is a list of {name, value} in v1beta4 and a string map in v1beta3; KubeletConfiguration.featureGates is a
map of gate name to boolean. `check_component` models those fields only (not the rest of the types).
"""

from __future__ import annotations

import pytest
import yaml

from deploys import files as f
from labkit.scheduler_deploy.manifests import render_manifests
from tests.deploys.labs import make_lab

GANG = {"feature_gates": {"GenericWorkload": True, "GangScheduling": True},
        "runtime_config": {"scheduling.k8s.io/v1alpha2": True}}
IMAGE = "localhost/kubelab-scheduler:0.1.0-0123456789ab"


def docs(text: str) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(text)}


def check_component(component: dict, api: str) -> dict[str, str]:
    """A ControlPlaneComponent's extraArgs as a dict, refusing what kubeadm's decoder would."""
    assert set(component) <= {"extraArgs", "extraVolumes", "extraEnvs", "certSANs", "timeoutForControlPlane"}
    args = component.get("extraArgs", [] if api == "v1beta4" else {})
    if api == "v1beta4":
        assert isinstance(args, list) and all(set(arg) == {"name", "value"} for arg in args)
        assert all(isinstance(arg["value"], str) for arg in args)
        return {arg["name"]: arg["value"] for arg in args}
    assert isinstance(args, dict) and all(isinstance(value, str) for value in args.values())
    return args


@pytest.mark.parametrize("version,api", [("1.36.4", "v1beta4"), ("1.35.9", "v1beta4")])
def test_gates_reach_every_control_plane_component_and_the_kubelet(version, api):
    lab = make_lab(kubernetes={"version": version, **GANG})
    config = docs(f.kubeadm_init_config(lab))
    cluster = config["ClusterConfiguration"]
    flag = "GangScheduling=true,GenericWorkload=true"
    assert check_component(cluster["apiServer"], api) == {"feature-gates": flag,
                                                          "runtime-config": "scheduling.k8s.io/v1alpha2=true"}
    assert check_component(cluster["controllerManager"], api) == {"feature-gates": flag}
    assert check_component(cluster["scheduler"], api) == {"feature-gates": flag}
    gates = config["KubeletConfiguration"]["featureGates"]
    assert gates == {"GangScheduling": True, "GenericWorkload": True}
    assert all(isinstance(value, bool) for value in gates.values())


def test_without_gates_nothing_is_added():
    config = docs(f.kubeadm_init_config(make_lab()))
    assert "extraArgs" not in config["ClusterConfiguration"]["apiServer"]
    assert "controllerManager" not in config["ClusterConfiguration"]
    assert "featureGates" not in config["KubeletConfiguration"]


def test_v1beta3_takes_the_flags_as_a_map():
    lab = make_lab(kubernetes={"version": "1.30.6", "runtime_config": {"api/alpha": False}})
    cluster = docs(f.kubeadm_init_config(lab))["ClusterConfiguration"]
    assert check_component(cluster["apiServer"], "v1beta3") == {"runtime-config": "api/alpha=false"}


def test_the_component_check_refuses_the_other_api_versions_form():
    with pytest.raises(AssertionError):
        check_component({"extraArgs": {"feature-gates": "A=true"}}, "v1beta4")
    with pytest.raises(AssertionError):
        check_component({"extraArgs": [{"name": "feature-gates", "value": "A=true"}]}, "v1beta3")


@pytest.mark.parametrize("mode", ["standalone", "extender"])
def test_the_scheduler_pod_gets_the_gates(mode):
    lab = make_lab(kubernetes=GANG, scheduler={"mode": mode})
    manifests = render_manifests(lab, IMAGE, access=[])
    (deployment,) = [obj for m in manifests for obj in m.objects if obj["kind"] == "Deployment"]
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        flags = container.get("args", []) + container.get("command", [])
        assert "--feature-gates=GangScheduling=true,GenericWorkload=true" in flags, container["name"]


def test_no_flag_without_gates():
    manifests = render_manifests(make_lab(), IMAGE, access=[])
    assert "--feature-gates" not in "".join(m.text for m in manifests)
