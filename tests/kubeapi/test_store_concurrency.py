"""Store semantics under concurrency and the bounded history window."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.fixtures import running_server
from kubeapi_testserver.server import KubeApiServer
from kubeapi_testserver.store import Store

pytestmark = pytest.mark.api


def test_concurrent_binds_of_one_pod_have_exactly_one_winner(kube_api: KubeApiServer, kube_api_client):
    kube_api.add_pod("contested")
    api = client.CoreV1Api(kube_api_client)

    def bind(node: str) -> int:
        try:
            return api.create_namespaced_pod_binding(
                "contested", "default", {"metadata": {"name": "contested"}, "target": {"name": node}},
                _preload_content=False).status
        except client.ApiException as exc:
            assert "is already assigned to node" in json.loads(exc.body)["message"]
            return exc.status

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(bind, [f"node-{i}" for i in range(16)]))
    assert sorted(codes) == [201] + [409] * 15
    pod = kube_api.get_object("pods", "contested", "default")
    assert pod["spec"]["nodeName"] in {f"node-{i}" for i in range(16)}


def test_concurrent_lease_updates_from_one_read_have_exactly_one_winner(kube_api: KubeApiServer, kube_api_client):
    coord = client.CoordinationV1Api(kube_api_client)
    coord.create_namespaced_lease("kube-system", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "x"}})
    seen = coord.read_namespaced_lease("l", "kube-system")

    def take(holder: str) -> int:
        body = {"metadata": {"name": "l", "resourceVersion": seen.metadata.resource_version},
                "spec": {"holderIdentity": holder}}
        try:
            coord.replace_namespaced_lease("l", "kube-system", body)
            return 200
        except client.ApiException as exc:
            return exc.status

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(take, [f"candidate-{i}" for i in range(8)]))
    assert sorted(codes) == [200] + [409] * 7


def test_history_window_drops_old_changes_by_itself():
    with running_server(history_limit=20) as server:
        start = server.resource_version
        server.add_nodes(30)
        with pytest.raises(StatusError) as info:
            server.store.check_watchable(start)
        assert info.value.code == 410 and info.value.body["reason"] == "Expired"
        server.store.check_watchable(server.resource_version - 5)  # recent history is kept


def test_changes_after_returns_consecutive_history():
    store = Store()
    first = store.resource_version
    store.create("namespaces", {"metadata": {"name": "a"}})
    store.create("namespaces", {"metadata": {"name": "b"}})
    store.delete("namespaces", "", "a")
    changes = store.changes_after(first, 0, store.watch_epoch)
    assert changes is not None
    assert [(c.type, c.obj["metadata"]["name"], c.rv) for c in changes] == [
        ("ADDED", "a", first + 1), ("ADDED", "b", first + 2), ("DELETED", "a", first + 3)]
    assert changes[2].obj["metadata"]["resourceVersion"] == str(first + 3)
    assert store.changes_after(first + 2, 0, store.watch_epoch)[0].type == "DELETED"  # type: ignore[index]
    store.compact()
    assert store.changes_after(first, 0, store.watch_epoch) is None  # a reader behind compaction must stop
