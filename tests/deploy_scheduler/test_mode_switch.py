"""deploy-scheduler after a change of scheduler.mode: the other mode's objects go, ours only, against the API
test server (kubeapi_testserver). That server does not serve server-side apply, so a mode's apply is stood in for
by storing each object its manifests render (replacing one of the same name), which is what apply leaves
behind; the deletions are real requests to the server."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from labdef.lab import load_lab, with_changes
from labkit.kube import Kube
from labkit.scheduler_deploy import verb
from labkit.scheduler_deploy.apply import RESOURCES, describe
from labkit.scheduler_deploy.manifests import render_manifests
from labkit.scheduler_deploy.mode_switch import remove_other_mode

pytestmark = pytest.mark.api

STANDALONE = load_lab()
EXTENDER = with_changes(STANDALONE, {"scheduler.mode": "extender"})
NAME, NS = STANDALONE.scheduler.name, STANDALONE.scheduler.namespace
IMAGE = "localhost/kubelab-scheduler:test"


def rendered(lab) -> list[dict[str, Any]]:
    return [obj for manifest in render_manifests(lab, IMAGE) for obj in manifest.objects]


def where(obj: dict[str, Any]) -> tuple[str, str, str]:
    """(storage, name, namespace) of an object in the test server."""
    _, plural, namespaced = RESOURCES[obj["kind"]]
    return plural, obj["metadata"]["name"], obj["metadata"]["namespace"] if namespaced else ""


def store(kube_api, obj: dict[str, Any]) -> None:
    storage, name, namespace = where(obj)
    if kube_api.get_object(storage, name, namespace) is None:
        kube_api.create_object(storage, obj)
    else:
        kube_api.update_object(storage, name, lambda old: {**obj, "metadata": {**old["metadata"], **obj["metadata"]}},
                               namespace)


def applied(kube_api, lab) -> None:
    for obj in rendered(lab):
        store(kube_api, obj)


def stored(kube_api, obj: dict[str, Any]) -> bool:
    return kube_api.get_object(*where(obj)) is not None


@pytest.fixture
def kube(kube_api_kubeconfig):
    client = Kube.from_kubeconfig(kube_api_kubeconfig)
    yield client
    client.close()


def test_standalone_to_extender_deletes_standalones_cluster_role_and_binding(kube_api, kube):
    applied(kube_api, STANDALONE)
    bootstrap = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "system:kube-scheduler"}, "rules": []}
    store(kube_api, bootstrap)
    applied(kube_api, EXTENDER)
    lines: list[str] = []
    removed = remove_other_mode(kube, EXTENDER, IMAGE, lines.append)
    assert removed == [f"clusterrole/{NAME}", f"clusterrolebinding/{NAME}"]
    assert lines == [f"clusterrole/{NAME} deleted: standalone mode's, and this lab deploys extender mode",
                     f"clusterrolebinding/{NAME} deleted: standalone mode's, and this lab deploys extender mode"]
    assert kube_api.get_object("clusterroles", NAME) is None
    assert kube_api.get_object("clusterrolebindings", NAME) is None
    assert all(stored(kube_api, obj) for obj in rendered(EXTENDER))
    assert stored(kube_api, bootstrap)


def test_extender_to_standalone_deletes_extender_modes_rbac_in_kube_system_too(kube_api, kube):
    applied(kube_api, EXTENDER)
    applied(kube_api, STANDALONE)
    lines: list[str] = []
    removed = remove_other_mode(kube, STANDALONE, IMAGE, lines.append)
    assert sorted(removed) == sorted([f"clusterrolebinding/{NAME}-kube-scheduler",
                                      f"clusterrolebinding/{NAME}-volume-scheduler",
                                      f"rolebinding/{NAME}-authentication-reader",
                                      f"clusterrole/{NAME}-extender", f"clusterrolebinding/{NAME}-extender"])
    assert kube_api.get_object("rolebindings", f"{NAME}-authentication-reader", "kube-system") is None
    assert all(line.endswith("deleted: extender mode's, and this lab deploys standalone mode") for line in lines)
    assert all(stored(kube_api, obj) for obj in rendered(STANDALONE))  # the shared names stay: this mode's now
    assert kube_api.request_count("delete") == 5


def test_an_object_of_that_name_without_our_labels_is_kept(kube_api, kube):
    applied(kube_api, EXTENDER)
    theirs = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
              "metadata": {"name": NAME, "labels": {"app.kubernetes.io/managed-by": "someone-else"}}, "rules": []}
    store(kube_api, theirs)
    lines: list[str] = []
    assert remove_other_mode(kube, EXTENDER, IMAGE, lines.append) == []
    assert stored(kube_api, theirs)
    assert lines == [(f"{describe(theirs)} kept: standalone mode names it too, but it is not labelled as {NAME}'s "
                      f"(app.kubernetes.io/name=kubelab-scheduler, app.kubernetes.io/instance={NAME}, "
                      "app.kubernetes.io/component=scheduler, app.kubernetes.io/managed-by=kubelab)")]
    assert kube_api.request_count("delete") == 0


def test_a_lab_that_never_switched_deletes_nothing_and_says_nothing(kube_api, kube):
    applied(kube_api, STANDALONE)
    lines: list[str] = []
    assert remove_other_mode(kube, STANDALONE, IMAGE, lines.append) == []
    assert lines == []
    assert kube_api.request_count("delete") == 0


def test_deploy_scheduler_removes_them_once_the_new_mode_rolled_out(kube_api, kube_api_kubeconfig, monkeypatch,
                                                                     tmp_path):
    """The verb's order: image, side-load and rollout stood in for (no nodes here), apply as above."""
    applied(kube_api, STANDALONE)
    monkeypatch.setattr(verb, "node_platform", lambda *args: "linux/amd64")
    monkeypatch.setattr(verb, "ensure_image", lambda *args: SimpleNamespace(ref=IMAGE))
    monkeypatch.setattr(verb, "side_load", lambda *args: [])
    monkeypatch.setattr(verb, "apply", lambda *args: applied(kube_api, EXTENDER) or {})
    during_rollout = []
    monkeypatch.setattr(verb, "wait_for_rollout", lambda *args, **kwargs: during_rollout.append(
        kube_api.get_object("clusterroles", NAME) is not None))
    lines: list[str] = []
    result = verb.deploy_scheduler(EXTENDER, kube_api_kubeconfig, inventory=None, image_dir=tmp_path,
                                   echo=lines.append)
    assert during_rollout == [True]  # the old mode's permissions outlive its pods
    assert result["removed"] == [f"clusterrole/{NAME}", f"clusterrolebinding/{NAME}"]
    assert f"clusterrole/{NAME} deleted: standalone mode's, and this lab deploys extender mode" in lines
    assert lines[-1].startswith("took ")
