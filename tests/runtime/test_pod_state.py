"""Judging a failed write about a pod by the pod as it now is (scheduler.runtime.pod_state), and the binder's
use of it: a 409 from storage is retried, a pod assigned or replaced is dropped."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model import PodInfo
from scheduler.runtime.binder import BindOutcome, bind
from scheduler.runtime.client import ApiError
from scheduler.runtime.pod_state import PodStanding, state_of, uid_guard, write_about

POD = PodInfo(uid="u-1", namespace="default", name="p")
ETCD_CONFLICT = ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "p": rpc error: code = '
                         "Unavailable")


def stored(uid: str = "u-1", node: str = "", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


class FakeClient:
    """Answers writes from a list (an ApiError is raised, anything else returned) and GETs with `pod`."""

    def __init__(self, writes: list[Any], pod: dict[str, Any] | ApiError | None) -> None:
        self.writes = list(writes)
        self.pod = pod
        self.sent: list[tuple[str, str]] = []

    def request(self, verb: str, path: str, **kwargs: Any) -> Any:
        self.sent.append((verb, path))
        answer = (self.pod if self.pod is not None else ApiError(404, "NotFound", "not found")) \
            if verb == "GET" else self.writes.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        return answer

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path)


@pytest.mark.parametrize(("obj", "state"), [
    (None, PodStanding.GONE),
    (stored(uid="u-2"), PodStanding.GONE),
    (stored(deleting=True), PodStanding.GONE),
    (stored(node="n1"), PodStanding.ASSIGNED),
    (stored(), PodStanding.PENDING),
])
def test_state_of(obj, state) -> None:
    assert state_of(obj, "u-1") is state


@pytest.mark.parametrize(("pod", "outcome"), [
    (stored(), BindOutcome.ERROR),  # still unassigned: the 409 came from storage, retry
    (ApiError(500, "", "rpc error: code = Unavailable"), BindOutcome.ERROR),  # unreadable: retry
    (stored(node="n2"), BindOutcome.CONFLICT),  # assigned: drop
    (stored(uid="u-2"), BindOutcome.GONE),  # a same-name successor: drop
    (None, BindOutcome.GONE),  # deleted: drop
])
def test_a_refused_binding_is_judged_by_the_pod(pod, outcome) -> None:
    client = FakeClient([ETCD_CONFLICT], pod)
    assert bind(client, POD, "n1").outcome is outcome  # type: ignore[arg-type]
    assert [verb for verb, _ in client.sent] == ["POST", "GET"]


def test_a_server_error_on_binding_is_retried_without_a_read() -> None:
    client = FakeClient([ApiError(503, "ServiceUnavailable", "")], stored(node="n2"))
    assert bind(client, POD, "n1").outcome is BindOutcome.ERROR  # type: ignore[arg-type]
    assert [verb for verb, _ in client.sent] == ["POST"]


def test_write_about_retries_what_says_nothing_about_the_pod() -> None:
    client = FakeClient([ApiError(500, "", ""), ApiError(503, "", ""), {}], stored())
    assert write_about(client, POD, lambda: client.patch("/x", {}), pauses=(0, 0, 0))  # type: ignore[arg-type]
    assert [verb for verb, _ in client.sent] == ["PATCH", "PATCH", "PATCH"]


@pytest.mark.parametrize("err", [ApiError(0, "Unreachable", "timed out"), ApiError(429, "TooManyRequests", "")])
def test_write_about_does_not_resend_at_once_a_write_that_got_no_answer_or_a_429(err) -> None:
    client = FakeClient([err], stored())
    with pytest.raises(ApiError):
        write_about(client, POD, lambda: client.patch("/x", {}), pauses=(0, 0))  # type: ignore[arg-type]
    assert [verb for verb, _ in client.sent] == ["PATCH"]


@pytest.mark.parametrize("pod", [stored(uid="u-2"), stored(node="n1")])
def test_write_about_stops_when_the_pod_is_replaced_or_assigned(pod) -> None:
    invalid = ApiError(422, "Invalid", 'Pod "p" is invalid: metadata.uid: Invalid value: "u-1": field is immutable')
    client = FakeClient([invalid], pod)
    assert not write_about(client, POD, lambda: client.patch("/x", {}), pauses=(0,))  # type: ignore[arg-type]
    assert [verb for verb, _ in client.sent] == ["PATCH", "GET"]


def test_write_about_gives_up_after_its_attempts_and_skips_what_is_no_longer_news() -> None:
    client = FakeClient([ApiError(500, "", "down")] * 2, stored())
    with pytest.raises(ApiError):
        write_about(client, POD, lambda: client.patch("/x", {}), pauses=(0,))  # type: ignore[arg-type]
    assert not write_about(client, POD, lambda: client.patch("/x", {}), wanted=lambda: False)  # type: ignore[arg-type]
    assert len(client.sent) == 2


def test_uid_guard_keeps_the_patch_and_adds_the_uid() -> None:
    assert uid_guard(POD, {"status": {"nominatedNodeName": None}}) == {
        "status": {"nominatedNodeName": None}, "metadata": {"uid": "u-1"}}
