"""Pieces of the runtime that need no API server: token bucket, Status parsing, event/binding bodies."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s_client

from scheduler.model import PodInfo
from scheduler.runtime.binder import binding_body
from scheduler.runtime.client import ApiError, Client, RequestCancelled, TokenBucket, _error_from
from scheduler.runtime.events import NOTE_LIMIT, event_body, unschedulable_condition_patch


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_token_bucket_allows_burst_then_paces_at_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=50, burst=100, clock=t.clock, sleep=t.sleep)
    waits = [bucket.take() for _ in range(100)]
    assert waits == [0.0] * 100
    assert abs(bucket.take() - 0.02) < 1e-9  # the 101st request waits one token: 1/50 s
    t.now += 1.0  # a quiet second refills 50 tokens
    assert [bucket.take() for _ in range(49)] == [0.0] * 49


def test_token_bucket_disabled_with_non_positive_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=0, burst=1, clock=t.clock, sleep=t.sleep)
    assert all(bucket.take() == 0.0 for _ in range(1000))
    assert t.slept == []


def test_status_body_becomes_api_error() -> None:
    raw = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": 409,
            "reason": "Conflict",
            "message": 'Operation cannot be fulfilled on pods/binding "p": '
            'pod p is already assigned to node "n1"',
        }
    ).encode()
    err = _error_from(409, raw, "POST", "/api/v1/namespaces/default/pods/p/binding")
    assert (err.status, err.reason) == (409, "Conflict")
    assert "already assigned" in err.message
    assert not err.unreachable


def test_non_status_error_body_is_kept_as_text() -> None:
    err = _error_from(502, b"<html>bad gateway</html>", "GET", "/api/v1/pods")
    assert err.status == 502 and "bad gateway" in err.message


def pod() -> PodInfo:
    return PodInfo(uid="u-1", namespace="team", name="web-1", resource_version="42")


def test_binding_body_carries_uid_precondition() -> None:
    body = binding_body(pod(), "n2")
    assert body["metadata"] == {"name": "web-1", "namespace": "team", "uid": "u-1"}
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n2"}


def test_event_body_shape_and_note_limit() -> None:
    body = event_body(
        pod(),
        controller="my-scheduler",
        instance="my-scheduler-host",
        reason="FailedScheduling",
        action="Scheduling",
        note="x" * 5000,
        type_="Warning",
        now=1700000000.5,
    )
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert body["metadata"]["name"].startswith("web-1.")
    assert body["eventTime"] == "2023-11-14T22:13:20.500000Z"
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "team",
        "name": "web-1",
        "uid": "u-1",
        "resourceVersion": "42",
    }
    assert len(body["note"].encode()) <= NOTE_LIMIT


def test_condition_patch() -> None:
    cond = unschedulable_condition_patch("0/1 nodes are available: 1 Insufficient cpu.")["status"][
        "conditions"
    ]
    assert cond[0]["type"] == "PodScheduled" and cond[0]["status"] == "False"
    assert cond[0]["reason"] == "Unschedulable"


def test_requests_keep_the_server_urls_path_and_the_query() -> None:
    """Requests go straight to the host's connection pool: a server URL with a path (an API server behind a
    proxy, e.g. https://rancher/k8s/clusters/c-1) must keep that path in every request."""
    answers = _Answers([], server_path="/k8s/clusters/c-1/")
    try:
        assert answers.client.get("/api/v1/nodes", {"limit": 5, "continue": None}) == {}
    finally:
        answers.close()
    assert answers.paths == ["/k8s/clusters/c-1/api/v1/nodes?limit=5"]


class _Answers:
    """A tiny HTTP server answering GETs from a list: (status, Status details or None) each, then 200 {};
    ``paths`` records what was asked, ``client`` talks to it (its URL ending in ``server_path``)."""

    def __init__(self, answers: list[tuple[int, dict | None]], server_path: str = "") -> None:
        self.answers = list(answers)
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.paths.append(self.path)
                status, details = owner.answers.pop(0) if owner.answers else (200, None)
                body = json.dumps({} if status == 200 else
                                  {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status,
                                   "reason": "TooManyRequests", "message": "slow down",
                                   **({"details": details} if details else {})}).encode()
                self.send_response(status)
                if details:
                    self.send_header("Retry-After", str(details["retryAfterSeconds"]))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        cfg = k8s_client.Configuration()
        cfg.host = f"http://127.0.0.1:{self.server.server_address[1]}{server_path}"
        self.client = Client(cfg, qps=0)

    def close(self) -> None:
        self.client.close()
        self.server.shutdown()
        self.server.server_close()


def test_an_answer_asking_to_wait_is_tried_again_after_the_wait() -> None:
    """429 with Retry-After (details.retryAfterSeconds), as API Priority and Fairness throttles: the request
    goes again after that wait, as client-go's rest.Request does, and the caller sees the success."""
    answers = _Answers([(429, {"retryAfterSeconds": 1}), (503, {"retryAfterSeconds": 1})])
    try:
        start = time.monotonic()
        assert answers.client.get("/api/v1/nodes") == {}
        assert len(answers.paths) == 3
        assert time.monotonic() - start >= 2.0
    finally:
        answers.close()


def test_an_answer_without_retry_after_or_beyond_the_timeout_is_raised_at_once() -> None:
    answers = _Answers([(429, None), (429, {"retryAfterSeconds": 30})])
    try:
        with pytest.raises(ApiError) as plain:
            answers.client.get("/api/v1/nodes")
        assert plain.value.status == 429 and plain.value.retry_after is None
        with pytest.raises(ApiError) as long_wait:
            answers.client.get("/api/v1/nodes", timeout=5.0)  # 30 s of waiting does not fit in 5
        assert long_wait.value.retry_after == 30
        assert len(answers.paths) == 2
    finally:
        answers.close()


def test_cancel_ends_a_retry_after_wait() -> None:
    answers = _Answers([(429, {"retryAfterSeconds": 20})])
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    try:
        with pytest.raises(RequestCancelled):
            answers.client.request("GET", "/api/v1/nodes", cancel=cancel)
        assert len(answers.paths) == 1
    finally:
        answers.close()
