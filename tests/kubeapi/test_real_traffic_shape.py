"""The test server's answers weigh what a real kube-apiserver v1.36.2's do, object by object.

The recorded requests (../shared/reference/kube-apiserver-v1.36.2/index.json) are replayed against the test
server with the recorder's User-Agent; each answer's bytes (create, patch, binding, event, list item, watch
event) must be within 10% of the real one's, and a watch must send one event per chunk, one JSON line each.
A scheduler's CPU per pod follows these sizes, so a lighter stand-in would flatter the benchmark."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.reference import kube_apiserver_recording

pytestmark = pytest.mark.api

TOLERANCE = 0.10
NAMESPACE = "rec"  # the recording's names: equal names, equal bytes


def _index() -> dict[str, Any]:
    return json.loads(kube_apiserver_recording("index.json").read_text())


def _raw(port: int, method: str, target: str, body: Any = None,
         content_type: str = "application/json") -> tuple[list[str], list[bytes]]:
    """One request on its own connection: (header lines, body chunks; a Content-Length body is one)."""
    data = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: recorder/v0.0.0\r\n"
            f"Accept: application/json\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + data)
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    return _parse(raw)


def _parse(raw: bytes) -> tuple[list[str], list[bytes]]:
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    if not any(h.lower() == "transfer-encoding: chunked" for h in lines):
        return lines, [rest]
    chunks = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2:]
    return lines, chunks


def _recorded_chunks(name: str) -> list[bytes]:
    return _parse(kube_apiserver_recording(name).read_bytes())[1]


def _close(ours: int, real: int, what: str) -> None:
    assert abs(ours - real) <= TOLERANCE * real, f"{what}: the test server sent {ours} bytes, kube-apiserver {real}"


def _answer(port: int, method: str, target: str, body: Any = None, content_type: str = "application/json") -> bytes:
    lines, chunks = _raw(port, method, target, body, content_type)
    assert lines[0].split()[1] in ("200", "201"), (lines[0], chunks)
    return b"".join(chunks)


def _compact(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


def test_objects_and_watch_events_weigh_what_kube_apiservers_do(kube_api) -> None:
    index = _index()
    port = kube_api.port
    kube_api.add_namespace(NAMESPACE)
    start_rv = kube_api.resource_version
    merge = "application/merge-patch+json"

    node = index["node-create"]
    _close(len(_answer(port, "POST", "/api/v1/nodes", node["request_body"])), node["bytes"], "node create")
    for step in ("node-status-patch", "node-taint-lift"):
        method, target = index[step]["request"].split(" ", 1)
        _close(len(_answer(port, method, target, index[step]["request_body"], merge)), index[step]["bytes"], step)

    pod = index["pod-create"]
    created = json.loads(_answer(port, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod["request_body"]))
    _close(_compact(created), pod["bytes"], "pod create")
    binding = {**index["pod-binding"]["request_body"]}
    binding["metadata"] = {**binding["metadata"], "uid": created["metadata"]["uid"]}
    _close(len(_answer(port, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods/bench-0/binding", binding)),
           index["pod-binding"]["bytes"], "binding answer")
    event = index["event-create"]
    _close(len(_answer(port, "POST", f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events",
                       event["request_body"])), event["bytes"], "event create")

    # List items: bound pods and ready, untainted nodes, as the recording lists them.
    real_pods = json.loads(kube_apiserver_recording("pod-list.json").read_text())["items"]
    ours_pods = json.loads(_answer(port, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods"))["items"]
    _close(_compact(ours_pods[0]), _compact(real_pods[0]), "pod list item")
    real_nodes = json.loads(kube_apiserver_recording("node-list.json").read_text())["items"]
    ours_nodes = json.loads(_answer(port, "GET", "/api/v1/nodes?labelSelector=bench%3Dyes"))["items"]
    _close(_compact(ours_nodes[0]), _compact(real_nodes[0]), "node list item")

    # Watch events from before the node and pod were created: one chunk per event, one JSON line each.
    for resource, path, recording in (("pods", f"/api/v1/namespaces/{NAMESPACE}/pods", "watch-pods.http"),
                                      ("nodes", "/api/v1/nodes", "watch-nodes.http")):
        _, chunks = _raw(port, "GET", f"{path}?watch=1&resourceVersion={start_rv}&timeoutSeconds=1")
        real = _recorded_chunks(recording)
        for chunk in chunks:
            assert chunk.endswith(b"\n") and chunk.count(b"\n") == 1, f"{resource}: not one event per chunk"
        ours_types = [json.loads(c)["type"] for c in chunks]
        real_types = [json.loads(c)["type"] for c in real][:len(ours_types)]
        assert ours_types == real_types, resource
        for ours, theirs, kind in zip(chunks, real, ours_types, strict=False):
            _close(len(ours), len(theirs), f"{resource} watch {kind} event")


def test_created_pod_carries_what_admission_and_defaulting_add(kube_api) -> None:
    """The fields a scheduler decodes on every pod, by name (not only by weight)."""
    index = _index()
    kube_api.add_namespace(NAMESPACE)
    real = json.loads(kube_apiserver_recording("pod-create.json").read_text())
    ours = json.loads(_answer(kube_api.port, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods",
                              index["pod-create"]["request_body"]))
    assert ours["metadata"]["managedFields"][0]["fieldsV1"] == real["metadata"]["managedFields"][0]["fieldsV1"]
    assert ours["metadata"]["managedFields"][0]["manager"] == "recorder"
    assert set(ours["spec"]) == set(real["spec"])
    assert set(ours["spec"]["containers"][0]) == set(real["spec"]["containers"][0])
    sources = [next(iter(s)) for s in ours["spec"]["volumes"][0]["projected"]["sources"]]
    assert sources == ["serviceAccountToken", "configMap", "downwardAPI"]  # upstream's three (see admission.py)
    assert ours["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


def test_node_patches_keep_managed_fields_as_the_real_server(kube_api) -> None:
    index = _index()
    port = kube_api.port
    merge = "application/merge-patch+json"
    created = json.loads(_answer(port, "POST", "/api/v1/nodes", index["node-create"]["request_body"]))
    assert created["spec"]["taints"] == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    lifted: dict[str, Any] = {}
    for step in ("node-status-patch", "node-taint-lift"):
        method, target = index[step]["request"].split(" ", 1)
        lifted = json.loads(_answer(port, method, target, index[step]["request_body"], merge))
        real = json.loads(kube_apiserver_recording(f"{step}.json").read_text())
        assert [(e["manager"], e.get("subresource"), e["fieldsV1"]) for e in lifted["metadata"]["managedFields"]] \
            == [(e["manager"], e.get("subresource"), e["fieldsV1"]) for e in real["metadata"]["managedFields"]], step
    assert "taints" not in lifted["spec"]
