"""List + watch over HTTP with the official client: resume from resourceVersion, 410 Expired after
compaction, bookmarks, initial events, selector transitions, dropped connections."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, watch

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def _collect(stream, count: int) -> list[tuple[str, str]]:
    out = []
    for event in stream:
        out.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(out) == count:
            break
    return out


def test_list_carries_resource_version_and_watch_resumes_after_it(kube_api: KubeApiServer, core_v1):
    kube_api.add_nodes(2)
    listed = core_v1.list_node()
    assert [n.metadata.name for n in listed.items] == ["node-0", "node-1"]
    list_rv = listed.metadata.resource_version
    assert int(list_rv) == kube_api.resource_version

    kube_api.add_node("node-2")
    kube_api.update_node("node-0", {"metadata": {"labels": {"zone": "a"}}})
    kube_api.remove_node("node-1")

    w = watch.Watch()
    events = _collect(w.stream(core_v1.list_node, resource_version=list_rv, timeout_seconds=5), 3)
    w.stop()
    assert events == [("ADDED", "node-2"), ("MODIFIED", "node-0"), ("DELETED", "node-1")]


def test_each_change_gets_a_higher_global_resource_version(kube_api: KubeApiServer, core_v1):
    node = kube_api.add_node("n1")
    ns = core_v1.create_namespace({"metadata": {"name": "team-a"}})
    pod = core_v1.create_namespaced_pod("team-a", {"metadata": {"name": "p"},
                                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
    rvs = [int(node["metadata"]["resourceVersion"]), int(ns.metadata.resource_version),
           int(pod.metadata.resource_version)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_watch_from_compacted_resource_version_gets_410_expired(kube_api: KubeApiServer, core_v1):
    old_rv = core_v1.list_pod_for_all_namespaces().metadata.resource_version
    kube_api.add_pod("p1")
    compacted = kube_api.compact_history()

    # timeout_seconds disables the client's automatic retry, so the ERROR event surfaces as an exception.
    with pytest.raises(client.ApiException) as info:
        for _ in watch.Watch().stream(core_v1.list_pod_for_all_namespaces, resource_version=old_rv,
                                      timeout_seconds=5):
            pass
    assert info.value.status == 410
    assert info.value.reason == f"Expired: too old resource version: {old_rv} ({compacted})"


def test_expired_watch_is_an_error_event_inside_a_200_response(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("p1")
    kube_api.compact_history()
    resp = core_v1.list_pod_for_all_namespaces(watch=True, resource_version="1", timeout_seconds=2,
                                               _preload_content=False)
    assert resp.status == 200
    import json
    event = json.loads(resp.data.decode().strip())
    assert event == {"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: 1 ({kube_api.store.compacted_rv})", "reason": "Expired", "code": 410}}


def test_relist_after_410_then_watch_sees_new_changes(kube_api: KubeApiServer, core_v1):
    kube_api.add_pod("before")
    kube_api.compact_history()
    relisted = core_v1.list_namespaced_pod("default")
    assert [p.metadata.name for p in relisted.items] == ["before"]
    kube_api.add_pod("after")
    events = _collect(watch.Watch().stream(core_v1.list_namespaced_pod, "default",
                                           resource_version=relisted.metadata.resource_version,
                                           timeout_seconds=5), 1)
    assert events == [("ADDED", "after")]


def test_watch_without_resource_version_starts_with_current_objects(kube_api: KubeApiServer, core_v1):
    kube_api.add_nodes(2)
    events = _collect(watch.Watch().stream(core_v1.list_node, timeout_seconds=5), 2)
    assert events == [("ADDED", "node-0"), ("ADDED", "node-1")]


def test_bookmarks_carry_progress_when_requested(kube_api: KubeApiServer, core_v1):
    kube_api.bookmark_interval = 0.2
    rv = core_v1.list_node().metadata.resource_version
    kube_api.add_pod("unrelated")  # another resource type moves the global revision
    resp = core_v1.list_node(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                             timeout_seconds=1, _preload_content=False)
    import json
    lines = [json.loads(line) for line in resp.data.decode().splitlines() if line]
    assert lines, "no bookmark was sent"
    assert {e["type"] for e in lines} == {"BOOKMARK"}
    assert lines[-1]["object"]["metadata"]["resourceVersion"] == str(kube_api.resource_version)
    assert lines[-1]["object"]["kind"] == "Node"


def test_bookmark_two_seconds_before_the_deadline(kube_api: KubeApiServer, core_v1):
    """kube-apiserver bookmarks a watch 2 s before its timeoutSeconds run out, then ends it: a client that
    asks for short watches hears from a healthy server well before the periodic (~1 min) bookmark."""
    kube_api.bookmark_interval = 60.0  # the watch cache's bookmarkFrequency
    rv = core_v1.list_node().metadata.resource_version
    start = time.monotonic()
    resp = core_v1.list_node(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                             timeout_seconds=4, _preload_content=False)
    arrivals = [(time.monotonic() - start, line) for line in resp.stream(1024) if line.strip()]
    ended = time.monotonic() - start
    assert len(arrivals) == 1 and b'"BOOKMARK"' in arrivals[0][1]
    assert 1.5 <= arrivals[0][0] < 3.0, f"bookmark {arrivals[0][0]:.1f}s into a 4 s watch"
    assert ended >= 3.8


def test_no_bookmarks_unless_asked(kube_api: KubeApiServer, core_v1):
    kube_api.bookmark_interval = 0.1
    rv = core_v1.list_node().metadata.resource_version
    resp = core_v1.list_node(watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False)
    assert resp.data == b""


def test_send_initial_events_ends_with_annotated_bookmark(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("n1")
    resp = core_v1.list_node(watch=True, send_initial_events=True, resource_version_match="NotOlderThan",
                             allow_watch_bookmarks=True, timeout_seconds=1, _preload_content=False)
    import json
    lines = [json.loads(line) for line in resp.data.decode().splitlines() if line]
    assert lines[0]["type"] == "ADDED"
    assert lines[1]["type"] == "BOOKMARK"
    assert lines[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_timeout_seconds_ends_the_stream(kube_api: KubeApiServer, core_v1):
    rv = core_v1.list_node().metadata.resource_version
    events = list(watch.Watch().stream(core_v1.list_node, resource_version=rv, timeout_seconds=1))
    assert events == []


def test_object_leaving_a_selector_is_delivered_as_deleted(kube_api: KubeApiServer, core_v1):
    """Unassigned-pod watch (spec.nodeName=) like a scheduler's: binding makes the pod leave it."""
    pod = kube_api.add_pod("p1")
    rv = pod["metadata"]["resourceVersion"]
    stream = watch.Watch().stream(core_v1.list_pod_for_all_namespaces, field_selector="spec.nodeName=",
                                  resource_version=rv, timeout_seconds=5)
    kube_api.update_pod("p1", {"metadata": {"labels": {"x": "1"}}})
    core_v1.create_namespaced_pod_binding("p1", "default", {
        "metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "node-a"}}, _preload_content=False)
    events = []
    for event in stream:
        events.append((event["type"], event["raw_object"]["spec"].get("nodeName"),
                       event["raw_object"]["metadata"]["resourceVersion"]))
        if len(events) == 2:
            break
    assert [e[:2] for e in events] == [("MODIFIED", None), ("DELETED", None)]
    # The DELETED event carries the last matching state, stamped with the binding's revision.
    bound = core_v1.read_namespaced_pod("p1", "default")
    assert events[1][2] == bound.metadata.resource_version


def test_object_entering_a_selector_is_delivered_as_added(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("n1")
    rv = str(kube_api.resource_version)
    stream = watch.Watch().stream(core_v1.list_node, label_selector="pool=gpu", resource_version=rv,
                                  timeout_seconds=5)
    core_v1.patch_node("n1", {"metadata": {"labels": {"pool": "gpu"}}})
    core_v1.patch_node("n1", {"metadata": {"labels": {"pool": None}}})
    assert _collect(stream, 2) == [("ADDED", "n1"), ("DELETED", "n1")]


def test_namespaced_watch_sees_only_its_namespace(kube_api: KubeApiServer, core_v1):
    rv = str(kube_api.resource_version)
    kube_api.add_pod("other", "kube-system")
    kube_api.add_pod("mine", "default")
    assert _collect(watch.Watch().stream(core_v1.list_namespaced_pod, "default", resource_version=rv,
                                         timeout_seconds=5), 1) == [("ADDED", "mine")]


def test_dropped_watch_is_resumed_by_the_client_without_loss(kube_api: KubeApiServer, core_v1):
    rv = core_v1.list_node().metadata.resource_version
    w = watch.Watch()
    seen: list[str] = []
    done = threading.Event()

    def consume() -> None:
        try:
            for event in w.stream(core_v1.list_node, resource_version=rv):
                seen.append(event["raw_object"]["metadata"]["name"])
                if len(seen) == 2:
                    break
        finally:
            done.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    kube_api.add_node("first")
    kube_api.wait_for(lambda: seen == ["first"])
    kube_api.drop_watches(graceful=True)
    kube_api.wait_for(lambda: kube_api.request_count("watch", "nodes") >= 2)  # the client re-watched
    kube_api.add_node("second")
    assert done.wait(10)
    assert seen == ["first", "second"]
    # The re-watch resumed from the last seen object's resourceVersion, not from the start.
    last_watch = [r for r in kube_api.requests if r.verb == "watch"][-1]
    assert last_watch.code == 200


def test_abrupt_drop_breaks_the_client_stream(kube_api: KubeApiServer, core_v1):
    rv = core_v1.list_node().metadata.resource_version
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            for _ in watch.Watch().stream(core_v1.list_node, resource_version=rv):
                pass
        except Exception as exc:  # noqa: BLE001 - the test inspects whatever the client raised
            errors.append(exc)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    kube_api.wait_for(lambda: kube_api.open_watches == 1)
    kube_api.drop_watches()
    thread.join(10)
    assert not thread.is_alive()
    assert errors, "an abruptly cut watch must surface as an error in the client"


def test_list_pages_with_limit_and_continue(kube_api: KubeApiServer, core_v1):
    kube_api.add_nodes(5)
    first = core_v1.list_node(limit=2)
    assert [n.metadata.name for n in first.items] == ["node-0", "node-1"]
    assert first.metadata.remaining_item_count == 3
    second = core_v1.list_node(limit=2, _continue=first.metadata._continue)
    third = core_v1.list_node(limit=2, _continue=second.metadata._continue)
    assert [n.metadata.name for n in second.items + third.items] == ["node-2", "node-3", "node-4"]
    assert third.metadata._continue is None
    assert second.metadata.resource_version == first.metadata.resource_version


def test_server_notices_a_watch_client_that_went_away(kube_api: KubeApiServer):
    import socket
    sock = socket.create_connection((kube_api.host, kube_api.port))
    sock.sendall(f"GET /api/v1/nodes?watch=true&resourceVersion={kube_api.resource_version} HTTP/1.1\r\n"
                 f"Host: {kube_api.host}\r\n\r\n".encode())
    assert sock.recv(1024).startswith(b"HTTP/1.1 200 OK")
    kube_api.wait_for(lambda: kube_api.open_watches == 1)
    sock.close()
    kube_api.wait_for(lambda: kube_api.open_watches == 0, timeout=10)


def test_list_pages_are_a_consistent_snapshot(kube_api: KubeApiServer, core_v1):
    kube_api.add_nodes(4)
    first = core_v1.list_node(limit=2)
    kube_api.remove_node("node-3")
    kube_api.add_node("node-9")
    kube_api.update_node("node-2", {"metadata": {"labels": {"late": "yes"}}})
    rest = core_v1.list_node(limit=10, _continue=first.metadata._continue)
    assert [n.metadata.name for n in rest.items] == ["node-2", "node-3"]
    assert "late" not in rest.items[0].metadata.labels
    assert rest.metadata.resource_version == first.metadata.resource_version


def test_expired_continue_token_is_410(kube_api: KubeApiServer, core_v1):
    kube_api.add_nodes(3)
    first = core_v1.list_node(limit=1)
    kube_api.add_node("later")
    kube_api.compact_history()
    with pytest.raises(client.ApiException) as info:
        core_v1.list_node(limit=1, _continue=first.metadata._continue)
    assert info.value.status == 410 and '"reason":"Expired"' in info.value.body


def test_exact_list_reads_a_past_revision(kube_api: KubeApiServer, core_v1):
    kube_api.add_node("a")
    rv = str(kube_api.resource_version)
    kube_api.add_node("b")
    kube_api.remove_node("a")
    past = core_v1.list_node(resource_version=rv, resource_version_match="Exact")
    assert [n.metadata.name for n in past.items] == ["a"]
    assert past.metadata.resource_version == rv
    assert [n.metadata.name for n in core_v1.list_node().items] == ["b"]
    kube_api.compact_history()
    with pytest.raises(client.ApiException) as info:
        core_v1.list_node(resource_version=rv, resource_version_match="Exact")
    assert info.value.status == 410
