"""Rendered scheduler manifests: schema-valid for the lab's Kubernetes version, and the fields that bite.

Validation uses kubernetes-validate (strict: unknown fields fail) against the lab definition's version.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit.scheduler_deploy.manifests import CHECKSUM_ANNOTATION, MANIFESTS, render_config, render_manifests
from labkit.scheduler_deploy.verb import run_verb
from scheduler.config import parse_config
from tests import bundled_plugins

IMAGE = "localhost/kubelab-scheduler:0.1.0-0123456789ab"


def lab_with(**scheduler: object) -> Lab:
    base = load_lab()
    return Lab.model_validate({**base.model_dump(mode="json"),
                               "scheduler": {**base.scheduler.model_dump(mode="json"), **scheduler}})


def objects(lab: Lab, **render: object) -> dict[str, dict]:
    return {obj["kind"]: obj for m in render_manifests(lab, IMAGE, **render) for obj in m.objects}


def deployment(lab: Lab) -> dict:
    return objects(lab)["Deployment"]


def pod_spec(lab: Lab) -> dict:
    return deployment(lab)["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def lab() -> Lab:
    return load_lab()


def test_every_manifest_is_valid_for_the_labs_kubernetes_version(lab: Lab) -> None:
    docs = [obj for m in render_manifests(lab, IMAGE) for obj in m.objects]
    assert sorted(d["kind"] for d in docs) == sorted(
        ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment"])
    for doc in docs:
        # raises ValidationError naming the field on any schema violation or unknown field
        kubernetes_validate.validate(doc, lab.kubernetes.version, strict=True)


def test_validator_rejects_a_broken_manifest(lab: Lab) -> None:
    """The check above can fail: a misspelt field is caught for this version."""
    dep = deployment(lab)
    dep["spec"]["template"]["spec"]["nodeSelectr"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, lab.kubernetes.version, strict=True)


def test_deployment_targets_the_control_plane_as_kubeadm_labels_it(lab: Lab) -> None:
    spec = pod_spec(lab)
    # kubeadm sets the label with an empty value: "true" would never match
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
            "effect": "NoSchedule"} in spec["tolerations"]


def test_image_is_never_pulled_from_a_registry(lab: Lab) -> None:
    container = pod_spec(lab)["containers"][0]
    assert container["image"] == IMAGE
    assert container["imagePullPolicy"] in ("Never", "IfNotPresent")


def test_probes_hit_the_health_endpoints_on_the_configured_port(lab: Lab) -> None:
    custom = lab_with(port=18080)
    container = pod_spec(custom)["containers"][0]
    port = container["ports"][0]
    assert port["containerPort"] == 18080
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    config = parse_config(yaml.safe_load(render_config(custom)), "config", bundled_plugins.registry())
    assert config.healthzBindAddress.endswith(":18080") and config.metricsBindAddress.endswith(":18080")


def test_resources_and_restricted_security_context(lab: Lab) -> None:
    spec = pod_spec(lab_with(cpu_request="250m", memory_request="64Mi", memory_limit="96Mi"))
    container = spec["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "96Mi"}}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["readOnlyRootFilesystem"] is True


def _rules(obj: dict) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in obj["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_rbac_grants_exactly_what_the_scheduler_uses(lab: Lab) -> None:
    objs = objects(lab)
    expected_cluster = {
        *{("", "pods", v) for v in ("get", "list", "watch")},
        ("", "pods", "delete"),  # preemption's victims
        ("", "pods/binding", "create"),
        *{("", "pods/status", v) for v in ("patch", "update")},
        *{("", "nodes", v) for v in ("get", "list", "watch")},
        *{("", "namespaces", v) for v in ("list", "watch")},
        *{("", r, v) for r in ("persistentvolumeclaims", "persistentvolumes") for v in ("list", "watch")},
        *{("storage.k8s.io", "storageclasses", v) for v in ("list", "watch")},
        *{("policy", "poddisruptionbudgets", v) for v in ("list", "watch")},
        *{(g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")},
        # DynamicResources: reads the DRA kinds, writes claims (the finalizer) and their status (the allocation)
        *{("resource.k8s.io", r, v) for r in ("resourceslices", "deviceclasses", "resourceclaims")
          for v in ("get", "list", "watch")},
        *{("resource.k8s.io", r, v) for r in ("resourceclaims", "resourceclaims/status")
          for v in ("create", "update", "patch")},
    }
    assert _rules(objs["ClusterRole"]) == expected_cluster
    assert _rules(objs["Role"]) == {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    assert objs["Role"]["metadata"]["namespace"] == lab.scheduler.namespace
    sa = {"kind": "ServiceAccount", "name": lab.scheduler.name, "namespace": lab.scheduler.namespace}
    for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        assert objs[binding]["subjects"] == [sa]
        assert objs[binding]["roleRef"]["name"] == objs[role]["metadata"]["name"]
    assert pod_spec(lab)["serviceAccountName"] == lab.scheduler.name


def test_config_in_the_configmap_is_accepted_by_the_scheduler(lab: Lab) -> None:
    config_map = objects(lab)["ConfigMap"]
    config = parse_config(yaml.safe_load(config_map["data"]["config.yaml"]), "configmap", bundled_plugins.registry())
    assert [p.schedulerName for p in config.profiles] == [lab.scheduler.name]
    assert config.leaderElection.leaderElect is lab.scheduler.leader_elect
    mounted = {v["name"]: v for v in pod_spec(lab)["volumes"]}["config"]
    assert mounted["configMap"]["name"] == config_map["metadata"]["name"]
    args = pod_spec(lab)["containers"][0]["args"]
    assert "--config=/etc/kubelab-scheduler/config.yaml" in args
    assert "config.yaml" in config_map["data"]


def test_checksum_follows_the_config_only(lab: Lab) -> None:
    def checksum(l: Lab) -> str:
        return deployment(l)["spec"]["template"]["metadata"]["annotations"][CHECKSUM_ANNOTATION]

    text = objects(lab)["ConfigMap"]["data"]["config.yaml"]
    assert checksum(lab) == hashlib.sha256(text.encode()).hexdigest()
    packing = {"pluginConfig": [{"name": "LeastLoaded", "args": {"mode": "podCount", "strategy": "MostAllocated"}}]}
    assert checksum(lab_with(profile=packing)) != checksum(lab)
    assert checksum(lab_with(leader_elect=False)) != checksum(lab)
    # Not config: same checksum, so scaling or a new image does not count as a config change.
    assert checksum(lab_with(replicas=2)) == checksum(lab)


def test_rendering_twice_gives_identical_text(lab: Lab) -> None:
    assert [m.text for m in render_manifests(lab, IMAGE)] == [m.text for m in render_manifests(lab, IMAGE)]


def test_without_leader_election_old_and_new_pods_never_overlap(lab: Lab) -> None:
    assert deployment(lab)["spec"]["strategy"]["type"] == "RollingUpdate"
    assert deployment(lab_with(leader_elect=False))["spec"]["strategy"]["type"] == "Recreate"


def test_render_only_writes_every_manifest(tmp_path: Path) -> None:
    lines: list[str] = []
    run_verb(load_lab(), DEFAULT_LAB_FILE, render_only=tmp_path / "out", echo=lines.append)
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert [name.split("-", 1)[1] for name in written] == list(MANIFESTS)
    dep = yaml.safe_load((tmp_path / "out" / written[-1]).read_text())
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].startswith("localhost/kubelab-scheduler:")


def test_render_only_names_the_image_built_for_this_hosts_architecture(tmp_path: Path, monkeypatch) -> None:
    """Without asking the nodes: VirtualBox and lxc machines run the host's architecture (arm64 on Apple silicon)."""
    import platform

    from labkit.image import image_ref

    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    run_verb(load_lab(), DEFAULT_LAB_FILE, render_only=tmp_path, echo=lambda _line: None)
    dep = yaml.safe_load(max(tmp_path.glob("*deployment*")).read_text())
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    folders = [DEFAULT_LAB_FILE.parent / "plugins" / n for n in ("network_aware", "least_loaded")]
    assert image == image_ref("localhost/kubelab-scheduler", platform="linux/arm64", plugins=folders)
    assert image != image_ref("localhost/kubelab-scheduler", plugins=folders)
    assert image != image_ref("localhost/kubelab-scheduler", platform="linux/arm64")  # the folders count


def test_the_profile_is_the_lab_definitions_data_for_any_plugin(tmp_path: Path) -> None:
    """No plugin name lives in a template: a user's plugin folder and profile render as given, the folder
    passed to the scheduler where the image holds it, a module name as it is."""
    profile = {"plugins": {"filter": {"enabled": [{"name": "GpuAware"}]},
                           "score": {"enabled": [{"name": "GpuAware", "weight": 3}],
                                     "disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
               "pluginConfig": [{"name": "GpuAware", "args": {"annotation": "example.com/gpu", "min": 2}}],
               "percentageOfNodesToScore": 50}
    lab = lab_with(plugins=["../elsewhere/gpu_aware", "my_pkg.plugins"], profile=profile)
    rendered = objects(lab, access=[])  # the plugins are not on this host: no declarations to read
    config = yaml.safe_load(rendered["ConfigMap"]["data"]["config.yaml"])
    assert config["profiles"] == [{"schedulerName": "my-custom-scheduler", **profile}]
    args = rendered["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--plugins=/opt/kubelab/plugins/gpu_aware", "--plugins=my_pkg.plugins"]
    templates = sorted((DEFAULT_LAB_FILE.parent / "templates").rglob("*.j2"))
    assert templates, f"no templates under {DEFAULT_LAB_FILE.parent / 'templates'}: nothing would be checked"
    for template in templates:
        for name in ("NetworkAware", "LeastLoaded", "high-speed"):
            assert name not in template.read_text(), template


def test_a_profile_naming_its_scheduler_and_the_replaced_fields_are_refused() -> None:
    from labdef.lab import LabError, parse_lab

    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["profile"]["schedulerName"] = "x"
    with pytest.raises(LabError, match="scheduler.profile: schedulerName comes from scheduler.name"):
        parse_lab(data)
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["network_aware"] = {"label_key": "network-topology"}
    data["scheduler"]["least_loaded"] = {"mode": "podCount"}
    with pytest.raises(LabError) as err:
        parse_lab(data)
    text = str(err.value)
    assert ("scheduler.network_aware: replaced by scheduler.plugins (the plugin's folder) and scheduler.profile "
            "(the plugin enabled under plugins.multiPoint.enabled, its args under pluginConfig in camelCase, e.g. "
            "label_key -> labelKey)") in text
    assert "scheduler.least_loaded: replaced by scheduler.plugins (the plugin's folder)" in text


@pytest.mark.parametrize(("plugins", "message"), [
    (["gpu aware"], "scheduler.plugins[0]: 'gpu aware' is neither a folder (write ./gpu aware"),
    (["a/gpu_aware", "b/gpu_aware"], "scheduler.plugins[1]: folder name 'gpu_aware' is also scheduler.plugins[0]'s"),
    (["./gpu-aware"], "scheduler.plugins[0]: folder name 'gpu-aware' is not a Python package name"),
    (["gpu_aware.py"], "scheduler.plugins[0]: 'gpu_aware.py' is a file; give the folder holding the plugin"),
])
def test_bad_plugin_sources_are_named(plugins: list[str], message: str) -> None:
    from labdef.lab import LabError, parse_lab

    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["plugins"] = plugins
    with pytest.raises(LabError, match=re.escape(message)):
        parse_lab(data)
