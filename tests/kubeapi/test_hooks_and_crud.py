"""CRUD rules (names, namespaces, deletion) and the in-process test hooks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, config, watch

from kubeapi_testserver.fixtures import running_server
from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api
REPO = Path(__file__).resolve().parents[2]


def _pod_body(**meta) -> dict:
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "pause"}]}}


def test_create_fills_system_fields_and_generate_name(kube_api: KubeApiServer, core_v1):
    pod = core_v1.create_namespaced_pod("default", _pod_body(generateName="web-"))
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", pod.metadata.name)
    assert pod.metadata.uid and pod.metadata.creation_timestamp and pod.metadata.resource_version
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.status.phase == "Pending" and pod.status.qos_class == "BestEffort"
    assert {(t.key, t.effect) for t in pod.spec.tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute")}


def test_create_errors_are_real_status_bodies(kube_api: KubeApiServer, core_v1):
    core_v1.create_namespaced_pod("default", _pod_body(name="p1"))
    with pytest.raises(client.ApiException) as dup:
        core_v1.create_namespaced_pod("default", _pod_body(name="p1"))
    assert json.loads(dup.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "p1" already exists', "reason": "AlreadyExists",
        "details": {"name": "p1", "kind": "pods"}, "code": 409}
    with pytest.raises(client.ApiException) as no_ns:
        core_v1.create_namespaced_pod("missing", _pod_body(name="p1"))
    assert no_ns.value.status == 404 and json.loads(no_ns.value.body)["message"] == 'namespaces "missing" not found'
    with pytest.raises(client.ApiException) as bad_name:
        core_v1.create_namespaced_pod("default", _pod_body(name="Bad_Name"))
    assert bad_name.value.status == 422 and json.loads(bad_name.value.body)["reason"] == "Invalid"
    bad_qty = _pod_body(name="q")
    bad_qty["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    with pytest.raises(client.ApiException) as qty:
        core_v1.create_namespaced_pod("default", bad_qty)
    assert qty.value.status == 400 and "quantities must match" in qty.value.body


def test_rbac_names_are_path_segments_not_dns_subdomains(kube_api: KubeApiServer, kube_api_client):
    """kube-apiserver's bootstrap ClusterRoles are named like system:kube-scheduler (rbac ValidateRBACName);
    other objects keep the DNS-1123 subdomain rule."""
    rbac = client.RbacAuthorizationV1Api(kube_api_client)
    rbac.create_cluster_role({"metadata": {"name": "system:kube-scheduler"}, "rules": []})
    assert kube_api.get_object("clusterroles", "system:kube-scheduler") is not None
    with pytest.raises(client.ApiException) as bad:
        rbac.create_namespaced_role("default", {"metadata": {"name": "a%b"}, "rules": []})
    assert bad.value.status == 422 and "may not contain '%'" in json.loads(bad.value.body)["message"]
    with pytest.raises(client.ApiException) as colon:
        client.CoreV1Api(kube_api_client).create_namespaced_config_map("default", {"metadata": {"name": "a:b"}})
    assert colon.value.status == 422


def test_delete_preconditions_and_result(kube_api: KubeApiServer, core_v1):
    pod = kube_api.add_pod("p1")
    with pytest.raises(client.ApiException) as info:
        core_v1.delete_namespaced_pod("p1", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert info.value.status == 409
    with pytest.raises(client.ApiException) as stale:
        core_v1.delete_namespaced_pod("p1", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version="1")))
    assert json.loads(stale.value.body)["message"] == (
        'Operation cannot be fulfilled on pods "p1": Precondition failed: ResourceVersion in precondition: 1, '
        f'ResourceVersion in object meta: {pod["metadata"]["resourceVersion"]}')
    deleted = core_v1.delete_namespaced_pod("p1", "default", body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=pod["metadata"]["uid"])))
    assert deleted.metadata.name == "p1"
    assert kube_api.get_object("pods", "p1", "default") is None


def test_namespace_deletion_deletes_its_objects(kube_api: KubeApiServer, core_v1):
    core_v1.create_namespace({"metadata": {"name": "scenario"}})
    for i in range(3):
        core_v1.create_namespaced_pod("scenario", _pod_body(name=f"p{i}"))
    kube_api.add_pod("survivor")
    rv = str(kube_api.resource_version)
    stream = watch.Watch().stream(core_v1.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5)
    # The server answers with the Namespace (Terminating); the client's signature says V1Status, so read raw.
    ns = json.loads(core_v1.delete_namespace("scenario", _preload_content=False).data)
    assert ns["kind"] == "Namespace" and ns["status"]["phase"] == "Terminating"
    deleted = []
    for event in stream:
        deleted.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(deleted) == 3:
            break
    assert sorted(deleted) == [("DELETED", "p0"), ("DELETED", "p1"), ("DELETED", "p2")]
    assert [p["metadata"]["name"] for p in kube_api.pods()] == ["survivor"]
    with pytest.raises(client.ApiException) as gone:
        core_v1.read_namespace("scenario")
    assert gone.value.status == 404


def test_delete_collection_by_label(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("a", labels={"run": "x"})
    kube_api.add_pod("b", labels={"run": "y"})
    core_v1.delete_collection_namespaced_pod("default", label_selector="run=x")
    assert [p["metadata"]["name"] for p in kube_api.pods()] == ["b"]


def test_fail_next_injects_forbidden_with_rbac_wording(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    kube_api.fail_next(1, 403, resource="pods/binding")
    body = {"metadata": {"name": "p1"}, "target": {"name": "n"}}
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False)
    status = json.loads(info.value.body)
    assert info.value.status == 403 and status["reason"] == "Forbidden"
    assert status["message"] == ('pods "p1" is forbidden: User "system:anonymous" cannot create resource '
                                 '"pods/binding" in API group "" in the namespace "default"')
    assert status["details"] == {"name": "p1", "kind": "pods"}
    # Only the next one failed.
    assert core_v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False).status == 201
    assert kube_api.request_count("create", "pods/binding") == 2
    assert kube_api.request_count("create", "pods/binding", code=403) == 1


def test_fail_next_500_by_path_and_verb(kube_api: KubeApiServer, core_v1):
    kube_api.fail_next(2, 500, path=r"/nodes$", verb="list", message="etcd is sad")
    for _ in range(2):
        with pytest.raises(client.ApiException) as info:
            core_v1.list_node()
        assert info.value.status == 500 and json.loads(info.value.body)["message"] == "etcd is sad"
    assert core_v1.list_node().items == []
    assert core_v1.list_namespace().items  # other paths were never affected


def test_set_node_ready_flips_condition_and_taint(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("n1")
    kube_api.set_node_ready("n1", False)
    node = core_v1.read_node("n1")
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["False"]
    assert [(t.key, t.effect) for t in node.spec.taints] == [("node.kubernetes.io/not-ready", "NoSchedule")]
    kube_api.set_node_ready("n1", True)
    node = core_v1.read_node("n1")
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
    assert node.spec.taints is None
    kube_api.set_node_ready("n1", False, taint=False)
    assert core_v1.read_node("n1").spec.taints is None


def test_invalid_pod_can_be_stored_by_hook(kube_api: KubeApiServer, core_v1):
    pod = kube_api.add_pod("bad", validate=False, cpu="lots")
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "lots"
    assert core_v1.list_namespaced_pod("default").items[0].metadata.name == "bad"


def test_load_kube_config_with_token(tmp_path: Path):
    with running_server(token="s3cret") as server:
        path = server.write_kubeconfig(tmp_path / "kc")
        configuration = client.Configuration()  # not the process-wide default: other tests share it
        config.load_kube_config(str(path), client_configuration=configuration)
        assert configuration.host == server.url
        assert client.CoreV1Api(client.ApiClient(configuration)).list_namespace().items
        anonymous = client.ApiClient(client.Configuration(host=server.url))
        with pytest.raises(client.ApiException) as info:
            client.CoreV1Api(anonymous).list_node()
        assert info.value.status == 401


def test_version_endpoint(kube_api: KubeApiServer, kube_api_client):
    assert client.VersionApi(kube_api_client).get_code().major == "1"


def test_command_line_entry_point(tmp_path: Path):
    kubeconfig = tmp_path / "kc"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "kubeapi_testserver", "--kubeconfig", str(kubeconfig),
                             "--nodes", "3"], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "Kubernetes API test server on http://127.0.0.1:" in first
        deadline = time.monotonic() + 10
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        api = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))
        assert [n.metadata.name for n in api.list_node().items] == ["node-0", "node-1", "node-2"]
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_graceful_pod_deletion_mode():
    with running_server(graceful_pod_deletion=True) as server:
        api = client.CoreV1Api(client.ApiClient(client.Configuration(host=server.url)))
        server.add_pod("bound", node_name="node-a")
        server.add_pod("pending")
        marked = api.delete_namespaced_pod("bound", "default")
        assert marked.metadata.deletion_timestamp is not None
        assert marked.metadata.deletion_grace_period_seconds == 30
        # deletionTimestamp is when the grace period ends, not when DELETE arrived
        assert marked.metadata.deletion_timestamp > marked.metadata.creation_timestamp
        assert [p["metadata"]["name"] for p in server.terminating_pods()] == ["bound"]
        api.delete_namespaced_pod("pending", "default")  # unbound: gone at once
        assert server.get_object("pods", "pending", "default") is None
        server.finish_pod_deletion("bound")
        assert server.pods() == []
        server.add_pod("now", node_name="node-a")
        api.delete_namespaced_pod("now", "default", grace_period_seconds=0)
        assert server.pods() == []


def test_injected_gone_and_counters_by_path(kube_api: KubeApiServer, core_v1):
    kube_api.fail_next(1, 410, path=r"^/api/v1/namespaces/default/pods$", method="GET")
    with pytest.raises(client.ApiException) as info:
        core_v1.list_namespaced_pod("default")
    body = json.loads(info.value.body)
    assert (info.value.status, body["reason"], body["code"]) == (410, "Gone", 410)
    core_v1.list_namespaced_pod("default")
    core_v1.list_namespaced_pod("kube-system")
    assert kube_api.request_count(path=r"/namespaces/default/pods$") == 2
    assert kube_api.request_count("list", "pods", code=200) == 2
    kube_api.reset_requests()
    assert kube_api.requests == []


def test_restart_on_same_port_keeps_objects_and_history(tmp_path: Path):
    from kubeapi_testserver.fixtures import free_port
    server = KubeApiServer(port=free_port())
    kubeconfig = server.write_kubeconfig(tmp_path / "kc")  # written before the server is up
    configuration = client.Configuration()
    config.load_kube_config(str(kubeconfig), client_configuration=configuration)
    configuration.retries = False
    api = client.CoreV1Api(client.ApiClient(configuration))
    with pytest.raises(urllib3.exceptions.HTTPError):  # connection refused
        api.list_node(_request_timeout=2)
    server.start()
    try:
        server.add_node("n1")
        rv = api.list_node().metadata.resource_version
        server.stop()
        server.start()
        assert [n.metadata.name for n in api.list_node().items] == ["n1"]
        assert api.list_node().metadata.resource_version == rv
    finally:
        server.stop()


def test_discovery_documents_list_served_resources(kube_api: KubeApiServer):
    def get(path: str) -> dict:
        with urllib3.PoolManager() as http:
            resp = http.request("GET", kube_api.url + path)
            assert resp.status == 200, path
            return json.loads(resp.data)

    core = get("/api/v1")
    assert core["groupVersion"] == "v1"
    assert {"pods", "pods/binding", "pods/status", "nodes", "leases"} & {r["name"] for r in core["resources"]} == {
        "pods", "pods/binding", "pods/status", "nodes"}
    assert [r["name"] for r in get("/apis/apps/v1")["resources"]] == [
        "deployments", "deployments/status", "daemonsets", "daemonsets/status"]
    assert {g["name"] for g in get("/apis")["groups"]} == {"apps", "apiextensions.k8s.io", "coordination.k8s.io",
                                                          "events.k8s.io", "node.k8s.io", "policy",
                                                          "rbac.authorization.k8s.io", "resource.k8s.io",
                                                          "scheduling.k8s.io", "storage.k8s.io"}
    assert [r["name"] for r in get("/apis/policy/v1")["resources"]] == ["poddisruptionbudgets",
                                                                        "poddisruptionbudgets/status"]
    with urllib3.PoolManager() as http:
        assert http.request("GET", kube_api.url + "/apis/v1").status == 404


def test_before_next_runs_an_action_before_the_request_is_served(kube_api: KubeApiServer, core_v1):
    """The hook forces an ordering: here the pod is deleted and re-created between the client's read and
    its binding, so the binding (carrying the old uid) meets the successor."""
    old = kube_api.add_pod("p1")
    seen = []

    def recreate(record) -> None:
        seen.append((record.verb, record.resource, record.name))
        kube_api.remove_pod("p1")
        kube_api.add_pod("p1")

    kube_api.before_next(2, recreate, resource="pods/binding")
    body = {"metadata": {"name": "p1", "uid": old["metadata"]["uid"]}, "target": {"name": "n"}}
    with pytest.raises(client.ApiException) as info:
        core_v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False)
    assert info.value.status == 409 and "Precondition failed: UID" in json.loads(info.value.body)["message"]
    assert seen == [("create", "pods/binding", "p1")]
    assert "default/p1" not in kube_api.bound_pods()
    core_v1.read_namespaced_pod("p1", "default")  # other requests do not run it
    assert len(seen) == 1


def test_storage_outage_unavailable_answers_as_kube_apiserver(kube_api: KubeApiServer, core_v1):
    """etcd down behind a running API server: a binding is a 409 Conflict carrying the etcd client's error,
    any other request a 500; nothing is written; once restored, requests are served again."""
    kube_api.add_pod("p1")
    kube_api.storage_outage()
    body = {"metadata": {"name": "p1"}, "target": {"name": "n"}}
    with pytest.raises(client.ApiException) as bind:
        core_v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False)
    status = json.loads(bind.value.body)
    assert bind.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"].startswith('Operation cannot be fulfilled on pods/binding "p1": rpc error: '
                                        "code = Unavailable")
    with pytest.raises(client.ApiException) as read:
        core_v1.read_namespaced_pod("p1", "default")
    assert read.value.status == 500 and "code = Unavailable" in json.loads(read.value.body)["message"]
    assert "default/p1" not in kube_api.bound_pods()
    kube_api.storage_restored()
    assert core_v1.create_namespaced_pod_binding("p1", "default", body, _preload_content=False).status == 201


def test_storage_outage_hang_holds_requests_until_restored(kube_api: KubeApiServer, core_v1):
    """"hang": a request waits for storage to come back, then is served as usual."""
    import threading

    kube_api.add_pod("p1")
    kube_api.storage_outage("hang")
    answers = []
    reader = threading.Thread(target=lambda: answers.append(core_v1.read_namespaced_pod("p1", "default")))
    reader.start()
    kube_api.wait_for(lambda: kube_api.request_count("get", "pods") == 1)
    reader.join(0.3)
    assert reader.is_alive() and not answers  # held back
    kube_api.storage_restored()
    reader.join(10)
    assert answers[0].metadata.name == "p1"
