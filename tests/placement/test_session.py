"""The run's reads of its pods, against the API test server (kubeapi_testserver)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from kubeapi_testserver.server import KubeApiServer
from labkit.kube import Kube
from labkit.placement.options import PlacementOptions
from labkit.placement.session import Session
from tests.placement.standins import WORKERS, make_lab

pytestmark = pytest.mark.api


def scheduled_event(pod: dict) -> dict:
    """A core/v1 Event as a scheduler's recorder writes it for a bound pod."""
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": f"{meta['name']}.",
                                                               "namespace": meta["namespace"]},
            "involvedObject": {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                               "uid": meta["uid"]},
            "reason": "Scheduled", "type": "Normal", "message": f"Successfully assigned to {WORKERS[0]}",
            "source": {"component": "my-custom-scheduler"}}


def test_a_bound_pods_scheduled_event_that_trails_its_binding_is_read(
        kube_api: KubeApiServer, kube_api_kubeconfig: Path) -> None:  # noqa: F811
    """Schedulers (kube-scheduler too) send the Scheduled event after the binding, asynchronously: the run
    reads a bound pod's events only once they are there (within a bound), so a miss can show them."""
    kube_api.add_namespace("placement-test")
    pod = kube_api.add_pod("p-1", "placement-test", node_name=WORKERS[0])
    kube = Kube.from_kubeconfig(kube_api_kubeconfig)
    session = Session(make_lab(), kube, None, PlacementOptions(kubeconfig=kube_api_kubeconfig, timeout=10),
                      echo=lambda line: None)
    session.namespace = "placement-test"
    late = threading.Timer(1.0, lambda: kube.request("POST", "/api/v1/namespaces/placement-test/events",
                                                     body=scheduled_event(pod)))
    late.start()
    try:
        (state,) = session.wait_bound(["p-1"])
    finally:
        late.join()
        kube.close()
    assert state.node == WORKERS[0]
    assert [e.reason for e in state.events] == ["Scheduled"]


def test_split_pods_carry_their_sets_label_and_objects_go_and_come(
        kube_api: KubeApiServer, kube_api_kubeconfig: Path) -> None:  # noqa: F811
    """pods.split labels each pod with its set, in name order; a scenario's objects are created in the run's
    namespace and deleted by end_scenario."""
    from labkit.placement.scenarios import parse_scenarios

    [scenario] = parse_scenarios({"scenarios": [{
        "id": "g", "title": "t", "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}],
        "pods": {"count": 4, "split": {"label": "example.com/set", "values": ["a", "b"]}},
        "expect": {"bound_all_or_none": {}}}]}).scenarios
    kube_api.add_namespace("placement-test")
    kube = Kube.from_kubeconfig(kube_api_kubeconfig)
    session = Session(make_lab(), kube, None, PlacementOptions(kubeconfig=kube_api_kubeconfig, timeout=10),
                      echo=lambda line: None)
    session.namespace = session.changes.namespace = "placement-test"
    try:
        session.create_objects(scenario)
        names = session.create_pods(scenario, 4)
        assert kube_api.get_object("configmaps", "cm", "placement-test") is not None
        labels = {p["metadata"]["name"]: p["metadata"]["labels"].get("example.com/set")
                  for p in kube_api.pods("placement-test")}
        assert labels == {"g-1": "a", "g-2": "a", "g-3": "b", "g-4": "b"}
        assert session.pod_sets(scenario, names) == {"a": ["g-1", "g-2"], "b": ["g-3", "g-4"]}
        assert session.end_scenario() == ["deleted ConfigMap cm"]
        assert kube_api.get_object("configmaps", "cm", "placement-test") is None
        assert kube_api.pods("placement-test") == []
    finally:
        kube.close()
