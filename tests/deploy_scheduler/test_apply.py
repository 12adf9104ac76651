"""Server-side apply on the wire, and "nothing changed" on a re-run.

STAND-IN: no kube-apiserver runs here and the in-repo API test server does not serve server-side apply, so
a small recording HTTP server answers instead. It checks only what labkit sends (method, path, content
type, fieldManager and force, the object) and keeps resourceVersion the way the real server does for an
apply: unchanged when the applied object is the same. The apply semantics themselves (field ownership,
merges) are kube-apiserver's and are not imitated here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from kubeapi_testserver.kubeconfig import write_kubeconfig
from labdef.lab import load_lab
from labkit.kube import Kube
from labkit.scheduler_deploy.apply import apply, object_path
from labkit.scheduler_deploy.manifests import render_manifests

LAB = load_lab()


class Recorder(BaseHTTPRequestHandler):
    store: ClassVar[dict[str, dict]] = {}
    requests: ClassVar[list[tuple[str, str, dict, str]]] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.requests.append(("GET", path, {}, ""))
        if path in self.store:
            self._send(200, self.store[path])
        else:
            self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": f"{path} not found"})

    def do_PATCH(self) -> None:
        url = urlsplit(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(("PATCH", url.path, parse_qs(url.query), self.headers["Content-Type"]))
        old = self.store.get(url.path)
        if old is not None and _without_resource_version(old) == body:
            self._send(200, old)  # an apply that changes nothing keeps the object as it is
            return
        rv = str(int(old["metadata"]["resourceVersion"]) + 1) if old else "1"
        self.store[url.path] = {**body, "metadata": {**body["metadata"], "resourceVersion": rv}}
        self._send(200, self.store[url.path])


def _without_resource_version(obj: dict) -> dict:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[type[Recorder], Path]]:
    handler = type("Handler", (Recorder,), {"store": {}, "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{server.server_port}")
    try:
        yield handler, kubeconfig
    finally:
        server.shutdown()
        server.server_close()


def test_apply_is_server_side_with_the_kubelab_field_manager(recorder) -> None:
    handler, kubeconfig = recorder
    manifests = render_manifests(LAB, "localhost/kubelab-scheduler:0.1.0-aaaaaaaaaaaa")
    outcome = apply(Kube.from_kubeconfig(kubeconfig), manifests, echo=lambda line: None)
    objects = [o for m in manifests for o in m.objects]
    assert set(outcome.values()) == {"created"} and len(outcome) == len(objects)
    patches = [r for r in handler.requests if r[0] == "PATCH"]
    assert [p[1] for p in patches] == [object_path(o) for o in objects]
    for _, _, query, content_type in patches:
        assert content_type == "application/apply-patch+yaml"
        assert query == {"fieldManager": ["kubelab"], "force": ["true"]}
    assert handler.store[object_path(objects[-1])]["kind"] == "Deployment"


def test_reapplying_the_same_manifests_changes_nothing_and_a_new_image_rolls(recorder) -> None:
    _, kubeconfig = recorder
    api = Kube.from_kubeconfig(kubeconfig)
    apply(api, render_manifests(LAB, "localhost/kubelab-scheduler:0.1.0-aaaaaaaaaaaa"), echo=lambda line: None)
    again = apply(api, render_manifests(LAB, "localhost/kubelab-scheduler:0.1.0-aaaaaaaaaaaa"),
                  echo=lambda line: None)
    assert set(again.values()) == {"unchanged"}
    rolled = apply(api, render_manifests(LAB, "localhost/kubelab-scheduler:0.1.0-bbbbbbbbbbbb"),
                   echo=lambda line: None)
    assert rolled.pop(f"deployment/{LAB.scheduler.name}") == "configured"
    assert set(rolled.values()) == {"unchanged"}


def test_object_paths_follow_the_api_groups() -> None:
    objs = {o["kind"]: o for m in render_manifests(LAB, "x:1") for o in m.objects}
    ns, name = LAB.scheduler.namespace, LAB.scheduler.name
    assert object_path(objs["Deployment"]) == f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"
    assert object_path(objs["ClusterRole"]) == f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"
    assert object_path(objs["ConfigMap"]) == f"/api/v1/namespaces/{ns}/configmaps/{name}-config"
