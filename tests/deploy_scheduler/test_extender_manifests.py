"""deploy-scheduler in extender mode: a second kube-scheduler (the official image at the lab's Kubernetes
version) and our extender in one pod. The manifests pass the same schema validation as standalone mode;
standalone mode renders byte for byte what it rendered before extender mode existed.

Nothing here runs kube-scheduler (no binary or image on these machines): these tests check what is rendered;
what kube-scheduler accepts in its configuration is test_kube_scheduler_config.py's subject.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab, with_changes
from labkit.scheduler_deploy.manifests import (
    CHECKSUM_ANNOTATION,
    EXTENDER_CONFIG_FILE,
    KUBE_SCHEDULER_CONFIG_FILE,
    MANIFESTS,
    render_manifests,
)
from labkit.scheduler_deploy.verb import run_verb
from scheduler.config import parse_config
from scheduler.framework import build_profiles
from tests import bundled_plugins

IMAGE = "localhost/kubelab-scheduler:0.1.0-0123456789ab"
# What standalone mode renders for the default lab.yaml, with IMAGE: recorded before extender mode (commit
# 2372312), re-recorded for three intended changes since (02-rbac.yaml: the volume plugins', preemption's and DRA's
# rules). Extender mode must leave these bytes alone; re-record only for an intended standalone change.
RECORDED_STANDALONE = Path(__file__).parent / "recorded" / "standalone"


def extender_lab(**extender: object) -> Lab:
    changes: dict[str, object] = {"scheduler.mode": "extender"}
    changes.update({f"scheduler.extender.{key}": value for key, value in extender.items()})
    return with_changes(load_lab(), changes)


def objects(lab: Lab, **render: object) -> list[dict]:
    return [obj for m in render_manifests(lab, IMAGE, **render) for obj in m.objects]


def one(lab: Lab, kind: str, name: str | None = None, **render: object) -> dict:
    found = [o for o in objects(lab, **render)
             if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


def containers(lab: Lab) -> dict[str, dict]:
    spec = one(lab, "Deployment")["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def kube_scheduler_config(lab: Lab) -> dict:
    return yaml.safe_load(one(lab, "ConfigMap")["data"]["kube-scheduler.yaml"])


@pytest.fixture(scope="module")
def lab() -> Lab:
    return extender_lab()


def test_standalone_manifests_are_byte_identical_to_before_extender_mode() -> None:
    rendered = render_manifests(load_lab(), IMAGE)
    assert load_lab().scheduler.mode == "standalone"
    for index, manifest in enumerate(rendered, start=1):
        recorded = (RECORDED_STANDALONE / f"{index:02d}-{manifest.filename}").read_text()
        assert manifest.text == recorded, manifest.filename


def test_every_extender_manifest_is_valid_for_the_labs_kubernetes_version(lab: Lab) -> None:
    docs = objects(lab)
    assert sorted(d["kind"] for d in docs) == sorted(
        ["ServiceAccount", "ClusterRoleBinding", "ClusterRoleBinding", "RoleBinding", "Role", "RoleBinding",
         "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment"])
    for doc in docs:
        kubernetes_validate.validate(doc, lab.kubernetes.version, strict=True)


def test_kube_scheduler_is_the_official_image_at_the_clusters_version_on_the_control_plane(lab: Lab) -> None:
    later = with_changes(lab, {"kubernetes.version": "1.35.2"})
    for each in (lab, later):
        kube_scheduler = containers(each)["kube-scheduler"]
        assert kube_scheduler["image"] == f"registry.k8s.io/kube-scheduler:v{each.kubernetes.version}"
        assert kube_scheduler["imagePullPolicy"] == "IfNotPresent"  # kubeadm pulled it onto the control plane
        assert "--config=/etc/kubelab-scheduler/kube-scheduler.yaml" in kube_scheduler["command"]
    spec = one(lab, "Deployment")["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
            "effect": "NoSchedule"} in spec["tolerations"]


def test_extender_container_listens_on_loopback_at_the_configured_port(lab: Lab) -> None:
    extender = containers(extender_lab(port=9123))["extender"]
    assert extender["image"] == IMAGE and extender["imagePullPolicy"] == "Never"
    assert extender["args"][0] == "extender"
    assert "--listen=127.0.0.1:9123" in extender["args"]
    assert "ports" not in extender  # nothing outside the pod talks to it
    config = kube_scheduler_config(extender_lab(port=9123))
    assert config["extenders"][0]["urlPrefix"] == "http://127.0.0.1:9123"


def test_probes_kube_scheduler_over_https_and_the_extender_inside_its_container(lab: Lab) -> None:
    both = containers(lab)
    kube_scheduler = both["kube-scheduler"]
    assert kube_scheduler["ports"] == [{"name": "https", "containerPort": 10259, "protocol": "TCP"}]
    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert kube_scheduler[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
        command = both["extender"][probe]["exec"]["command"]
        assert command[:2] == ["python", "-c"] and command[-1] == f"http://127.0.0.1:8888{path}"


def test_extender_probe_command_fails_on_a_503_and_passes_on_a_200(lab: Lab, tmp_path: Path) -> None:
    """The probe's script, run against a real listener answering like the extender's /readyz before sync."""
    status = {"code": 503}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status["code"])
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        command = containers(lab)["extender"]["readinessProbe"]["exec"]["command"]
        url = f"http://127.0.0.1:{server.server_address[1]}/readyz"
        run = [sys.executable, *command[1:-1], url]
        assert subprocess.run(run, capture_output=True, check=False).returncode != 0
        status["code"] = 200
        assert subprocess.run(run, capture_output=True, check=False).returncode == 0
    finally:
        server.shutdown()


def test_kube_scheduler_configuration_carries_the_lab_definitions_extender_settings() -> None:
    lab = extender_lab(weight=3, http_timeout="750ms", node_cache_capable=False, ignorable=True)
    config = kube_scheduler_config(lab)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert [p["schedulerName"] for p in config["profiles"]] == [lab.scheduler.name]
    assert config["extenders"] == [{
        "urlPrefix": "http://127.0.0.1:8888", "filterVerb": "filter", "prioritizeVerb": "prioritize",
        "weight": 3, "httpTimeout": "750ms", "nodeCacheCapable": False, "ignorable": True}]
    assert config["leaderElection"] == {"leaderElect": True, "resourceLock": "leases",
                                        "resourceNamespace": lab.scheduler.namespace,
                                        "resourceName": lab.scheduler.name}
    assert config["leaderElection"]["resourceName"] != "kube-scheduler"  # the cluster's own scheduler's Lease


def test_extenders_config_runs_only_our_plugins_beside_kube_schedulers_defaults(lab: Lab) -> None:
    """kube-scheduler runs its default plugins itself: the extender scoring them again would count them twice."""
    config = parse_config(yaml.safe_load(one(lab, "ConfigMap")["data"]["config.yaml"]), "configmap",
                          bundled_plugins.registry())
    profile = build_profiles(config)[lab.scheduler.name]
    assert [plugin.name for plugin, _ in profile.filters] == ["NetworkAware"]
    assert [plugin.name for plugin, _, _ in profile.scores] == ["NetworkAware", "LeastLoaded"]


def test_rbac_is_what_a_second_kube_scheduler_and_the_extender_need(lab: Lab) -> None:
    s = lab.scheduler
    sa = [{"kind": "ServiceAccount", "name": s.name, "namespace": s.namespace}]
    bindings = {o["roleRef"]["name"]: o for o in objects(lab) if o["kind"] in ("ClusterRoleBinding", "RoleBinding")}
    assert set(bindings) == {"system:kube-scheduler", "system:volume-scheduler",
                             "extension-apiserver-authentication-reader", f"{s.name}-leader-election",
                             f"{s.name}-extender"}
    assert all(b["subjects"] == sa for b in bindings.values())
    reader = bindings["extension-apiserver-authentication-reader"]
    assert reader["kind"] == "RoleBinding" and reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"]["kind"] == "Role"
    # system:kube-scheduler grants lease create, but get/update only on the Lease named kube-scheduler.
    lease_role = one(lab, "Role")
    assert lease_role["metadata"]["namespace"] == s.namespace
    assert lease_role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                    "resourceNames": [s.name], "verbs": ["get", "update"]}]
    assert bindings[f"{s.name}-leader-election"]["metadata"]["namespace"] == s.namespace
    # The extender reads nodes, pods and namespaces (list+watch) and nothing else.
    assert one(lab, "ClusterRole")["rules"] == [{"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"],
                                                 "verbs": ["list", "watch"]}]


def test_checksum_follows_both_configurations(lab: Lab) -> None:
    def checksum(each: Lab) -> str:
        return one(each, "Deployment")["spec"]["template"]["metadata"]["annotations"][CHECKSUM_ANNOTATION]

    assert checksum(extender_lab(weight=2)) != checksum(lab)  # kube-scheduler's configuration
    changed_ours = with_changes(lab, {"scheduler.profile": {
        "pluginConfig": [{"name": "LeastLoaded", "args": {"mode": "podCount", "strategy": "MostAllocated"}}]}})
    assert checksum(changed_ours) != checksum(lab)  # the extender's
    assert checksum(with_changes(lab, {"scheduler.replicas": 2})) == checksum(lab)


def test_render_only_writes_the_manifests_and_kube_schedulers_configuration(tmp_path: Path) -> None:
    lab_file = tmp_path / "lab.yaml"
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["mode"] = "extender"
    data["scheduler"]["plugins"] = [str(DEFAULT_LAB_FILE.parent / p) for p in data["scheduler"]["plugins"]]
    lab_file.write_text(yaml.safe_dump(data))
    lines: list[str] = []
    out = tmp_path / "out"
    run_verb(load_lab(lab_file), lab_file, render_only=out, echo=lines.append)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([*(f"{i:02d}-{m}" for i, m in enumerate(MANIFESTS, start=1)),
                            KUBE_SCHEDULER_CONFIG_FILE, EXTENDER_CONFIG_FILE])
    in_configmap = yaml.safe_load((out / "03-configmap.yaml").read_text())["data"]
    for alone, key in ((KUBE_SCHEDULER_CONFIG_FILE, "kube-scheduler.yaml"), (EXTENDER_CONFIG_FILE, "config.yaml")):
        assert (out / alone).read_text() == in_configmap[key]
    parse_config(yaml.safe_load((out / EXTENDER_CONFIG_FILE).read_text()), EXTENDER_CONFIG_FILE,
                 bundled_plugins.registry())
    assert any(f"python -m scheduler extender --config {out / EXTENDER_CONFIG_FILE} --kubeconfig FILE --listen "
               f"127.0.0.1:8888 --plugins {DEFAULT_LAB_FILE.parent / 'plugins' / 'network_aware'} --plugins "
               f"{DEFAULT_LAB_FILE.parent / 'plugins' / 'least_loaded'}`" in line for line in lines), lines


def test_render_only_in_standalone_mode_writes_no_kube_scheduler_configuration(tmp_path: Path) -> None:
    run_verb(load_lab(), DEFAULT_LAB_FILE, render_only=tmp_path, echo=lambda _line: None)
    assert not (tmp_path / KUBE_SCHEDULER_CONFIG_FILE).exists() and not (tmp_path / EXTENDER_CONFIG_FILE).exists()


def test_the_extender_serves_the_plugins_the_profile_enables(lab: Lab) -> None:
    """kube-scheduler runs its default plugins itself: the extender's profile is the lab's with them disabled,
    and the extender container gets the plugin folders as the standalone scheduler does."""
    profile = {"plugins": {"multiPoint": {"enabled": [{"name": "GpuAware", "weight": 2}]},
                           "score": {"disabled": [{"name": "GpuAware"}]}},
               "pluginConfig": [{"name": "GpuAware", "args": {"min": 2}}]}
    mine = with_changes(lab, {"scheduler.profile": profile, "scheduler.plugins": ["../elsewhere/gpu_aware"]})
    # the plugins are not on this host: no declarations to read
    config = yaml.safe_load(one(mine, "ConfigMap", access=[])["data"]["config.yaml"])
    assert config["profiles"] == [{
        "schedulerName": "my-custom-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "GpuAware", "weight": 2}], "disabled": [{"name": "*"}]},
                    "score": {"disabled": [{"name": "GpuAware"}]}},
        "pluginConfig": [{"name": "GpuAware", "args": {"min": 2}}]}]
    spec = one(mine, "Deployment", access=[])["spec"]["template"]["spec"]
    assert "--plugins=/opt/kubelab/plugins/gpu_aware" in {c["name"]: c for c in spec["containers"]}["extender"]["args"]
