"""Informer list+watch mechanics against the Kubernetes API test server (kubeapi_testserver)."""

from __future__ import annotations

import threading
import time

import pytest

from kubeapi_testserver import running_server
from kubeapi_testserver.kubeconfig import write_kubeconfig
from scheduler.runtime.client import Client, load_configuration
from scheduler.runtime.informer import Informer
from tests.faults.proxy import FaultProxy

pytestmark = pytest.mark.api


class Recorder:
    def __init__(self, explode_on: str = "") -> None:
        self.events: list[tuple[str, str, str]] = []
        self.explode_on = explode_on
        self.lock = threading.Lock()

    def _rec(self, kind: str, obj: dict) -> None:
        meta = obj["metadata"]
        if meta["name"] == self.explode_on and kind != "del":
            raise RuntimeError("handler bug")
        with self.lock:
            self.events.append((kind, meta["name"], meta.get("uid", "")))

    def on_add(self, obj: dict) -> None:
        self._rec("add", obj)

    def on_update(self, obj: dict) -> None:
        self._rec("upd", obj)

    def on_delete(self, obj: dict) -> None:
        self._rec("del", obj)

    def names(self, kind: str) -> list[str]:
        with self.lock:
            return [n for k, n, _ in self.events if k == kind]


def start(kubeconfig, handler: Recorder, relists: list[str]) -> Informer:
    client = Client(load_configuration(str(kubeconfig)), qps=0)
    inf = Informer(client, "pods", "/api/v1/pods", handler, page_size=2, on_relist=relists.append)
    inf.start()
    assert inf.synced.wait(10)
    return inf


def test_paginated_list_then_watch(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_pods(5, cpu="10m")
    rec, relists = Recorder(), []
    inf = start(kube_api_kubeconfig, rec, relists)
    try:
        assert sorted(rec.names("add")) == [f"pod-{i}" for i in range(5)]  # 3 pages of 2
        kube_api.update_pod("pod-0", {"metadata": {"labels": {"x": "y"}}})
        kube_api.remove_pod("pod-1")
        kube_api.wait_for(lambda: rec.names("upd") == ["pod-0"] and rec.names("del") == ["pod-1"])
    finally:
        inf.stop()
    assert kube_api.request_count("list", "pods") == 3
    assert relists == []


def test_relist_after_410_reports_the_gap_exactly_once(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_pods(3, cpu="10m")
    rec, relists = Recorder(), []
    inf = start(kube_api_kubeconfig, rec, relists)
    try:
        uid0 = kube_api.get_object("pods", "pod-0", "default")["metadata"]["uid"]
        old_uid = kube_api.get_object("pods", "pod-2", "default")["metadata"]["uid"]
        kube_api.drop_watches()
        kube_api.remove_pod("pod-0")  # deleted while not watching
        kube_api.update_pod("pod-1", {"metadata": {"labels": {"changed": "yes"}}})
        kube_api.remove_pod("pod-2")  # re-created under the same name: a new object
        kube_api.add_pod("pod-2", cpu="10m")
        kube_api.add_pod("new", cpu="10m")
        kube_api.compact_history()
        kube_api.wait_for(lambda: relists == ["expired"])
        kube_api.wait_for(lambda: "new" in rec.names("add"))
    finally:
        inf.stop()
    deletes = sorted((n, u) for k, n, u in rec.events if k == "del")
    assert deletes == [("pod-0", uid0), ("pod-2", old_uid)]  # tombstones carry the lost objects' UIDs
    assert rec.names("upd") == ["pod-1"]
    assert sorted(rec.names("add")) == ["new", "pod-0", "pod-1", "pod-2", "pod-2"]


def test_handler_error_skips_one_object_without_relisting(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_pod("poison", cpu="10m")
    rec, relists = Recorder(explode_on="poison"), []
    inf = start(kube_api_kubeconfig, rec, relists)
    try:
        kube_api.add_pod("after", cpu="10m")
        kube_api.wait_for(lambda: "after" in rec.names("add"))
    finally:
        inf.stop()
    assert relists == []
    assert kube_api.request_count("list", "pods") == 1


def test_bookmarks_advance_the_resume_point(tmp_path) -> None:
    """A quiet pod watch still moves its resourceVersion forward (allowWatchBookmarks), so a reconnect
    after other resources changed a lot resumes instead of hitting 410."""
    with running_server(bookmark_interval=0.2) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kc")
        rec, relists = Recorder(), []
        inf = start(kubeconfig, rec, relists)
        try:
            before = int(inf.resource_version)
            server.add_nodes(3)  # other resources move the global resourceVersion
            server.wait_for(lambda: int(inf.resource_version) >= server.resource_version)
            assert int(inf.resource_version) > before
            assert rec.events == []
        finally:
            inf.stop()


def test_quiet_watches_on_a_healthy_server_are_never_taken_for_dead(tmp_path, caplog) -> None:
    """Bounds scaled down from the product's (watches of 3-4 s instead of 20-30 s, silence 5 s instead of
    40 s) against a server that bookmarks like kube-apiserver: once a minute, and 2 s before a watch's
    deadline (none for a watch of 2 s or less, so the scaled range starts above 2 s: with 2-3 s, runs
    whose watches all drew 2 s heard no bookmark and failed). Nothing happens for 8 s, yet each watch
    hears its bookmark and its end in time, resumes from the bookmark's resourceVersion, and is never
    replaced for silence."""
    with running_server(bookmark_interval=60.0) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kc")
        client = Client(load_configuration(str(kubeconfig)), qps=0)
        inf = Informer(client, "pods", "/api/v1/pods", Recorder(), watch_seconds=(3, 4), silence=5.0)
        inf.start()
        try:
            assert inf.synced.wait(10)
            server.add_nodes(1)  # another resource moves the global resourceVersion
            time.sleep(8)
            assert int(inf.resource_version) == server.resource_version  # a bookmark carried it
        finally:
            inf.stop()
    assert "watch silent" not in caplog.text
    assert server.request_count("list", "pods") == 1


def test_a_silent_watch_is_replaced_after_its_silence_bound(kube_api, tmp_path, caplog) -> None:
    """The path goes silent (tests/faults/proxy.py: no FIN, no RST) and heals, the watch's connection
    staying dead: the informer gives it up after `silence` seconds and resumes on a new connection."""
    proxy = FaultProxy(kube_api.port).start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "kc", proxy.url)
        client = Client(load_configuration(str(kubeconfig)), qps=0)
        rec = Recorder()
        inf = Informer(client, "pods", "/api/v1/pods", rec, silence=2.0)
        inf.start()
        try:
            assert inf.synced.wait(10)
            kube_api.wait_for(lambda: kube_api.open_watches == 1)
            proxy.partition()
            proxy.heal()
            kube_api.add_pod("after-heal", cpu="10m")
            kube_api.wait_for(lambda: "after-heal" in rec.names("add"), timeout=10)
        finally:
            inf.stop()
    finally:
        proxy.stop()
    assert "watch silent for 2s" in caplog.text
    assert kube_api.request_count("list", "pods") == 1  # resumed, not relisted
