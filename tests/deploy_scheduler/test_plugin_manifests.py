"""A plugin folder's crds/ and manifests/: checked before anything is built or applied (each problem named by
its file and the fix), then applied before the scheduler, CRDs first (API tier: against the API test server)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit.kube import Kube
from labkit.scheduler_deploy import DeployError, plugin_manifests
from labkit.scheduler_deploy.plugin_manifests import PluginManifestError
from labkit.scheduler_deploy.verb import run_verb

PLUGIN = '''"""Gate: a test plugin that reads PodGroups."""
from scheduler.framework import Plugin


def pre_filter(pod, args):
    return None


def filter_node(state, node):
    return None


PLUGINS = [Plugin("Gate", pre_filter=pre_filter, filter_node=filter_node,
                  watches=("scheduling.x-k8s.io/v1alpha1/podgroups",))]
'''

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
             "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"minMember": {"type": "integer"}}}}}}}]}}
PODGROUP = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "default-gang"},
            "spec": {"minMember": 2}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gate-prices"}, "data": {"a": "1"}}


def folder_lab(tmp_path: Path, files: dict[str, object]) -> Lab:
    """The default lab with one plugin folder holding `files` (relative path -> YAML documents or text)."""
    folder = tmp_path / "my_plugins" / "gate"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(PLUGIN)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump_all(content))
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["plugins"] = ["my_plugins/gate"]
    data["scheduler"]["profile"] = {"plugins": {"multiPoint": {"enabled": [{"name": "Gate"}]}}}
    data["placement"] = {}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(data))
    return load_lab(tmp_path / "lab.yaml")


def test_crds_come_first_and_namespaced_objects_go_to_the_schedulers_namespace(tmp_path: Path) -> None:
    lab = folder_lab(tmp_path, {"manifests/objects.yaml": [PODGROUP, CONFIGMAP], "crds/podgroup.yaml": [CRD]})
    loaded = plugin_manifests.load(lab)
    assert [c.path for c in loaded.crds] == [
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io"]
    ns = lab.scheduler.namespace
    assert [o.path for o in loaded.objects] == [
        f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/default-gang",
        f"/api/v1/namespaces/{ns}/configmaps/gate-prices"]
    assert loaded.objects[0].source == f"{tmp_path}/my_plugins/gate/manifests/objects.yaml (document 1)"


def test_a_folder_without_manifests_has_none(tmp_path: Path) -> None:
    assert not plugin_manifests.load(folder_lab(tmp_path, {"README.md": "no manifests here"}))


@pytest.mark.parametrize(("files", "message"), [
    ({"crds/broken.yaml": "kind: [unclosed\n"}, "crds/broken.yaml: not valid YAML"),
    ({"crds/list.yaml": "- a\n- b\n"}, "crds/list.yaml: not a Kubernetes object"),
    ({"manifests/cm.yaml": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]},
     "manifests/cm.yaml: metadata.name missing"),
    ({"crds/old.yaml": [{**CRD, "apiVersion": "apiextensions.k8s.io/v1beta1"}]},
     "crds/old.yaml: apiVersion apiextensions.k8s.io/v1beta1: write apiextensions.k8s.io/v1"),
    ({"crds/named.yaml": [{**CRD, "metadata": {"name": "podgroups"}}]},
     "metadata.name: 'podgroups'; it must be <spec.names.plural>.<spec.group>: podgroups.scheduling.x-k8s.io"),
    ({"manifests/pg.yaml": [PODGROUP]},
     ("manifests/pg.yaml: kind PodGroup (scheduling.x-k8s.io/v1alpha1) is not one deploy-scheduler can apply: a "
     "custom resource needs its CustomResourceDefinition in a plugin folder's crds/")),
    ({"crds/a.yaml": [CRD], "crds/b.yaml": [CRD]},
     "crds/b.yaml: customresourcedefinition/podgroups.scheduling.x-k8s.io is also in"),
    ({"manifests/role.yaml": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                               "metadata": {"name": "r", "namespace": "x"}}]},
     "ClusterRole is cluster-scoped: remove metadata.namespace"),
])
def test_a_bad_manifest_is_named_by_its_file_with_the_fix(tmp_path: Path, files: dict, message: str) -> None:
    with pytest.raises(PluginManifestError) as err:
        plugin_manifests.load(folder_lab(tmp_path, files))
    assert message in str(err.value), str(err.value)


def test_a_crd_missing_its_schema_and_storage_version_lists_each_field(tmp_path: Path) -> None:
    bad = {**CRD, "spec": {**CRD["spec"], "versions": [{"name": "v1", "served": True}]}}
    with pytest.raises(PluginManifestError) as err:
        plugin_manifests.load(folder_lab(tmp_path, {"crds/pg.yaml": [bad]}))
    assert "spec.versions: mark exactly one version storage: true" in str(err.value)
    assert "spec.versions[0].schema.openAPIV3Schema: required" in str(err.value)


def test_render_only_writes_them_first_crds_before_the_other_objects(tmp_path: Path) -> None:
    lab = folder_lab(tmp_path, {"crds/podgroup.yaml": [CRD], "manifests/objects.yaml": [PODGROUP, CONFIGMAP]})
    out, lines = tmp_path / "rendered", []
    run_verb(lab, tmp_path / "lab.yaml", render_only=out, echo=lines.append)
    names = sorted(p.name for p in out.iterdir())
    assert names[:2] == ["00-plugin-manifests.yaml", "01-serviceaccount.yaml"]
    text = (out / "00-plugin-manifests.yaml").read_text()
    docs = list(yaml.safe_load_all(text))
    assert [d["kind"] for d in docs] == ["CustomResourceDefinition", "PodGroup", "ConfigMap"]
    assert docs[0] == CRD
    assert docs[1]["metadata"] == {"name": "default-gang", "namespace": lab.scheduler.namespace}
    assert f"# from {tmp_path / 'my_plugins' / 'gate' / 'crds' / 'podgroup.yaml'}" in text
    assert any("00-plugin-manifests.yaml (the plugin folders' crds/ and manifests/, applied first)" in line
               for line in lines)


def test_render_only_without_plugin_manifests_writes_no_such_file(tmp_path: Path) -> None:
    run_verb(load_lab(), DEFAULT_LAB_FILE, render_only=tmp_path / "out", echo=lambda _line: None)
    assert not (tmp_path / "out" / "00-plugin-manifests.yaml").exists()


def test_render_only_and_deploy_refuse_a_bad_manifest_before_anything(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from labkit.scheduler_deploy import verb

    lab = folder_lab(tmp_path, {"manifests/pg.yaml": [PODGROUP]})
    out = tmp_path / "rendered"
    with pytest.raises(PluginManifestError):
        run_verb(lab, tmp_path / "lab.yaml", render_only=out, echo=lambda _line: None)
    assert not out.exists()
    monkeypatch.setattr(verb, "lab_hosts", lambda *args: pytest.fail("the inventory was read"))
    monkeypatch.setattr(verb, "deploy_scheduler", lambda *args: pytest.fail("something was deployed"))
    with pytest.raises(PluginManifestError):
        run_verb(lab, tmp_path / "lab.yaml", tmp_path / "kubeconfig", echo=lambda _line: None)


@pytest.mark.api
def test_applied_before_the_scheduler_crds_established_first(tmp_path: Path, kube_api, kube_api_kubeconfig) -> None:
    lab = folder_lab(tmp_path, {"crds/podgroup.yaml": [CRD], "manifests/objects.yaml": [PODGROUP, CONFIGMAP]})
    loaded = plugin_manifests.load(lab)
    assert lab.scheduler.namespace == "kube-system"  # one the server has
    lines: list[str] = []
    with contextlib.closing(Kube.from_kubeconfig(kube_api_kubeconfig)) as kube:
        first = plugin_manifests.apply(kube, loaded, lines.append)
        again = plugin_manifests.apply(kube, loaded, lines.append)
    assert first == {"customresourcedefinition/podgroups.scheduling.x-k8s.io": "created",
                     "podgroup/default-gang": "created", "configmap/gate-prices": "created"}
    assert set(again.values()) == {"unchanged"}
    stored = kube_api.get_object("podgroups.scheduling.x-k8s.io", "default-gang", lab.scheduler.namespace)
    assert stored["spec"] == {"minMember": 2}
    creates = [r.resource for r in kube_api.requests if r.method == "PATCH"][:3]
    assert creates == ["customresourcedefinitions", "podgroups", "configmaps"]


@pytest.mark.api
def test_a_crd_never_established_is_named(tmp_path: Path, kube_api, kube_api_kubeconfig) -> None:
    lab = folder_lab(tmp_path, {"crds/podgroup.yaml": [CRD]})
    loaded = plugin_manifests.load(lab)
    # A CRD the server never reports Established: here every read of it fails as not found.
    kube_api.fail_next(100, 404, verb="get", resource="customresourcedefinitions")
    now = [0.0]
    with contextlib.closing(Kube.from_kubeconfig(kube_api_kubeconfig)) as kube, pytest.raises(DeployError) as err:
        plugin_manifests.apply(kube, loaded, lambda _line: None, timeout=5, clock=lambda: now[0],
                               sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert "podgroups.scheduling.x-k8s.io not Established within 5 s" in str(err.value)


@pytest.mark.api
def test_deploy_scheduler_applies_them_before_the_schedulers_own(tmp_path: Path, kube_api, kube_api_kubeconfig,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The verb's order with image, side-load and rollout stood in for (no nodes here); the apply is real."""
    from types import SimpleNamespace

    from labkit.scheduler_deploy import verb

    lab = folder_lab(tmp_path, {"crds/podgroup.yaml": [CRD], "manifests/objects.yaml": [PODGROUP]})
    monkeypatch.setattr(verb, "node_platform", lambda *args: "linux/amd64")
    monkeypatch.setattr(verb, "ensure_image", lambda *args: SimpleNamespace(ref="localhost/s:1"))
    monkeypatch.setattr(verb, "side_load", lambda *args: [])
    monkeypatch.setattr(verb, "wait_for_rollout", lambda *args, **kwargs: None)
    lines: list[str] = []
    result = verb.deploy_scheduler(lab, kube_api_kubeconfig, inventory=None, image_dir=tmp_path, echo=lines.append)
    applied = [r.resource for r in kube_api.requests if r.method == "PATCH"]
    assert applied[:3] == ["customresourcedefinitions", "podgroups", "serviceaccounts"]
    assert result["applied"]["podgroup/default-gang"] == "created"
    assert "plugin manifests" in result["timings"] and lines[-1].startswith("took ")
    role = kube_api.get_object("clusterroles", lab.scheduler.name)
    assert {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"],
            "verbs": ["get", "list", "watch"]} in role["rules"]
