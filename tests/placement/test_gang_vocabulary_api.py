"""The scenario vocabulary gangs need, end to end against the API test server with the real scheduler (its
default plugins: no gang scheduler): objects created with a scenario and deleted after it, pods split into
labelled sets, each set bound whole or not at all, and nothing bound for a while. Stand-ins as in
test_placement_api.py."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.kubeapi.test_custom_resources import PODGROUP_CRD
from tests.placement.conftest import Cluster, by_scenario
from tests.placement.standins import DeploymentStandIn

pytestmark = pytest.mark.api

GANG_LABEL = "scheduling.x-k8s.io/pod-group"


def podgroup(name: str, min_member: int) -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": min_member}}


def write(cluster: Cluster, data: dict) -> str:
    path = cluster.workdir / "gang-scenarios.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_objects_and_sets_that_fit_pass_and_are_cleaned_up(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    cluster.server.create_object("customresourcedefinitions", copy.deepcopy(PODGROUP_CRD))
    scenarios = write(cluster, {"scenarios": [{
        "id": "two-gangs", "title": "two small gangs both fit",
        "objects": [podgroup("gang-a", 2), podgroup("gang-b", 2)],
        "pods": {"count": 4, "split": {"label": GANG_LABEL, "values": ["gang-a", "gang-b"]}},
        "expect": {"bound_all_or_none": {}}}]})
    code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "30")
    result = by_scenario(report)["two-gangs"]
    assert code == 0 and result["verdict"] == "pass", report
    assert result["reason"].startswith("gang-a: 2 bound (") and "; gang-b: 2 bound (" in result["reason"]
    assert cluster.server.request_count("create", "podgroups") == 2
    assert cluster.server.request_count("delete", "podgroups") == 2  # deleted after the scenario
    assert cluster.server.list_objects("podgroups.scheduling.x-k8s.io") == []


def test_default_plugins_half_bind_a_set_that_does_not_fit_and_the_scenario_says_so(
        cluster: Cluster, deployed: DeploymentStandIn) -> None:
    """Each worker has 2 CPUs: pods of 1500m go one per worker, so a set of 3 can only be bound whole by a
    gang scheduler that binds none of it; kube-scheduler's default plugins bind two."""
    scenarios = write(cluster, {"pod": {"cpu": "1500m"}, "scenarios": [{
        "id": "too-big", "title": "a set of three where two fit",
        "pods": {"count": 3},
        "expect": {"bound_all_or_none": {"whole_sets": 0, "settle_seconds": 1}}}]})
    code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "30")
    result = by_scenario(report)["too-big"]
    assert code == 1 and result["verdict"] == "miss", report
    assert result["reason"].startswith("set too-big: 2 of 3 bound (")
    assert "all or none expected: 0/3 nodes are available" in result["reason"]


def test_none_bound_holds_for_pods_nothing_can_take_and_misses_for_pods_that_fit(
        cluster: Cluster, deployed: DeploymentStandIn) -> None:
    scenarios = write(cluster, {"scenarios": [
        {"id": "huge", "title": "pods no node can take", "pods": {"count": 2, "patch": {"spec": {"containers": [
            {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "64"}}}]}}},
         "expect": {"none_bound": {"seconds": 2}}},
        {"id": "small", "title": "pods that fit", "pods": {"count": 1}, "expect": {"none_bound": {"seconds": 20}}},
    ]})
    code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "30")
    results = by_scenario(report)
    assert code == 1, report
    assert results["huge"]["verdict"] == "pass"
    assert results["huge"]["reason"].startswith("none of 2 bound after 2 s: 0/3 nodes are available")
    assert results["small"]["verdict"] == "miss"
    assert results["small"]["reason"].startswith("1 of 1 pods bound within 20 s: small-1->")


def test_an_object_of_a_kind_the_cluster_does_not_serve_is_refused_before_anything_changes(
        cluster: Cluster, deployed: DeploymentStandIn) -> None:
    scenarios = write(cluster, {"scenarios": [{
        "id": "no-crd", "title": "PodGroup without its CRD", "objects": [podgroup("g", 1)],
        "pods": {"count": 1}, "expect": {"bound_all_or_none": {}}}]})
    proc = cluster.run("--scenarios", scenarios)
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert (f"{scenarios}: scenario 'no-crd': objects[0]: this cluster does not serve kind PodGroup "
            "(scheduling.x-k8s.io/v1alpha1); install its CustomResourceDefinition first") in text
    assert cluster.placement_namespaces() == []


def test_keep_leaves_a_cluster_scoped_object_and_says_how_to_delete_it(cluster: Cluster,
                                                                      deployed: DeploymentStandIn) -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gang-high"},
             "value": 1000}
    scenarios = write(cluster, {"scenarios": [{"id": "kept", "title": "t", "objects": [high], "pods": {"count": 1},
                                               "expect": {"bound": {}}}]})
    proc = cluster.run("--scenarios", scenarios, "--keep")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cluster.server.get_object("priorityclasses", "gang-high") is not None
    assert "kubectl delete --raw /apis/scheduling.k8s.io/v1/priorityclasses/gang-high" in proc.stdout
    code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "20")
    assert code == 2 and "already exists" in report["problem"]  # the kept one is in the way, and named
    cluster.server.delete_object("priorityclasses", "gang-high")  # what the printed command does
    code, report = cluster.run_json("--scenarios", scenarios, "--timeout", "20")  # without --keep: deleted after
    assert code == 0, report
    assert cluster.server.get_object("priorityclasses", "gang-high") is None
