"""Scheduler behaviour users depend on (events and conditions, retries when the cluster changes, no
over-commit, relists, bind failures, malformed pods, health endpoints, credentials), end to end over
HTTP against the Kubernetes API test server in kubeapi_testserver (a stand-in for kube-apiserver)."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections import Counter

import pytest

from kubeapi_testserver import running_server
from scheduler.model import PodInfo
from scheduler.runtime.binder import BindOutcome, bind
from scheduler.runtime.client import Client, load_configuration
from scheduler.runtime.queue import UNSCHEDULABLE
from tests.scheduler_api.harness import (
    SCHEDULER,
    make_scheduler,
    our_pod,
    pod_condition,
    pod_events,
    running_scheduler,
    unreachable_kubeconfig,
)

pytestmark = pytest.mark.api


def test_failed_scheduling_event_and_condition(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node(
        "cp", cpu="8", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    )
    kube_api.add_node("w1", cpu="1")
    kube_api.add_node("w2", cpu="1")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("hungry", cpu="2", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: pod_events(kube_api, "hungry", "FailedScheduling"))
        kube_api.wait_for(lambda: pod_condition(kube_api, "hungry"))
    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to "
        "deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    event = pod_events(kube_api, "hungry", "FailedScheduling")[0]
    assert event["message"] == expected
    assert event["type"] == "Warning"
    assert event["reportingComponent"] == SCHEDULER
    assert event["involvedObject"]["kind"] == "Pod"
    assert (
        event["involvedObject"]["uid"] == kube_api.get_object("pods", "hungry", "default")["metadata"]["uid"]
    )
    cond = pod_condition(kube_api, "hungry")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", expected)


def test_scheduled_event(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("ok", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: pod_events(kube_api, "ok", "Scheduled"))
    event = pod_events(kube_api, "ok", "Scheduled")[0]
    assert event["message"] == "Successfully assigned default/ok to n1"
    assert event["type"] == "Normal"
    assert event["reportingInstance"].startswith(f"{SCHEDULER}-")
    assert kube_api.request_count("create", "pods/binding") == 1


def test_pod_becomes_schedulable_when_node_changes(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1", labels={"disk": "hdd"})
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("needs-ssd", cpu="100m", scheduler_name=SCHEDULER, node_selector={"disk": "ssd"})
        kube_api.wait_for(lambda: pod_events(kube_api, "needs-ssd", "FailedScheduling"))
        kube_api.update_node("n1", {"metadata": {"labels": {"disk": "ssd"}}})
        kube_api.wait_for(lambda: "default/needs-ssd" in kube_api.bound_pods())


def test_pod_becomes_schedulable_when_a_pod_is_deleted(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1", cpu="1")
    kube_api.add_pod("hog", cpu="800m", node_name="n1")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("waiting", cpu="500m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: pod_events(kube_api, "waiting", "FailedScheduling"))
        kube_api.remove_pod("hog")
        kube_api.wait_for(lambda: "default/waiting" in kube_api.bound_pods())


def test_pod_short_of_cpu_is_not_retried_for_a_new_node_label(kube_api, kube_api_kubeconfig) -> None:
    """Only NodeResourcesFit rejected it, and a label cannot give it cpu: it waits, unreported again, until
    the node's allocatable grows."""
    kube_api.add_node("n1", cpu="1")
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod("hungry", cpu="2", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: sched.queue.where("default/hungry") == UNSCHEDULABLE)
        kube_api.update_node("n1", {"metadata": {"labels": {"disk": "ssd"}}})
        kube_api.wait_for(lambda: sched.cache.node("n1").labels.get("disk") == "ssd")
        time.sleep(0.2)  # the handler moves the queue right after updating the cache
        assert sched.queue.where("default/hungry") == UNSCHEDULABLE
        kube_api.update_node("n1", {"status": {"allocatable": {"cpu": "4"}, "capacity": {"cpu": "4"}}})
        kube_api.wait_for(lambda: "default/hungry" in kube_api.bound_pods())
    assert len(pod_events(kube_api, "hungry", "FailedScheduling")) == 1


def test_no_overcommit_under_a_burst(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(3, cpu="1")
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pods(20, cpu="300m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 9)
        kube_api.wait_for(
            lambda: (
                len(
                    [
                        p
                        for p in kube_api.pods("default")
                        if pod_events(kube_api, p["metadata"]["name"], "FailedScheduling")
                    ]
                )
                == 11
            )
        )
        assert sched.cache.counts()["assumed_pods"] + sched.cache.counts()["pods"] == 9
    per_node = Counter(kube_api.bound_pods().values())
    assert per_node == {"node-0": 3, "node-1": 3, "node-2": 3}
    assert kube_api.request_count("create", "pods/binding") == 9


def test_watch_expiry_relists_without_losing_or_doubling(kube_api, kube_api_kubeconfig) -> None:
    """410 Gone: pods created and deleted while the watch was down are seen through the relist."""
    kube_api.add_nodes(2)
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pods(3, prefix="before-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 3)
        gone_uid = kube_api.get_object("pods", "before-0", "default")["metadata"]["uid"]
        kube_api.drop_watches()  # the informers reconnect after their backoff (>= 0.8 s)
        kube_api.add_pods(5, prefix="during-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.remove_pod("before-0")
        kube_api.compact_history()  # their last resourceVersion is now too old: 410 on re-watch
        kube_api.wait_for(lambda: sched.metrics.relists.labels("pods", "expired")._value.get() >= 1)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 7)
        kube_api.add_pod("after", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/after" in kube_api.bound_pods())
        assert not sched.cache.has_pod(gone_uid)
        counts = sched.cache.counts()
    assert kube_api.request_count("create", "pods/binding") == 9  # 3 + 5 + 1: nothing bound twice
    assert counts["pods"] + counts["assumed_pods"] == 8  # before-0 was forgotten


def test_bind_conflict_is_dropped_not_retried(kube_api, kube_api_kubeconfig) -> None:
    """The pod is bound elsewhere just before our binding is served: the 409 is confirmed by reading the pod
    (assigned), so the decision is dropped, not retried."""
    kube_api.add_node("n1")
    kube_api.before_next(1, lambda rec: kube_api.update_pod("raced", {"spec": {"nodeName": "elsewhere"}}),
                         resource="pods/binding")
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod("raced", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: kube_api.request_count("create", "pods/binding") == 1)
        kube_api.wait_for(lambda: sched.cache.counts()["assumed_pods"] == 0)
        kube_api.add_pod("next", cpu="100m", scheduler_name=SCHEDULER)  # the loop goes on
        kube_api.wait_for(lambda: "default/next" in kube_api.bound_pods())
        assert "default/raced" not in sched.queue
    assert kube_api.request_count("create", "pods/binding") == 2
    assert kube_api.request_count("create", "pods/binding", code=409) == 1
    assert kube_api.bound_pods()["default/raced"] == "elsewhere"


def test_bind_conflict_from_storage_is_retried(kube_api, kube_api_kubeconfig) -> None:
    """kube-apiserver answers a binding that met an etcd failure with 409 Conflict: the pod, read again, is
    still unassigned, so the binding is retried with backoff instead of the pod being dropped."""
    kube_api.add_node("n1")
    kube_api.fail_next(1, 409, resource="pods/binding", reason="Conflict",
                       message='Operation cannot be fulfilled on pods/binding "flaky": rpc error: code = '
                       "Unavailable desc = error reading from server: EOF")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("flaky", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/flaky" in kube_api.bound_pods(), timeout=15)
    assert kube_api.request_count("create", "pods/binding", code=409) == 1
    assert kube_api.request_count("create", "pods/binding", code=201) == 1
    assert kube_api.request_count("get", "pods", path="/pods/flaky$") == 1  # the pod was read once


def test_server_error_on_bind_retries_with_backoff(kube_api, kube_api_kubeconfig, caplog) -> None:
    kube_api.add_node("n1")
    kube_api.fail_next(1, 403, resource="pods/binding")
    caplog.set_level(logging.ERROR, logger="scheduler")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("retry", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/retry" in kube_api.bound_pods(), timeout=15)
    assert kube_api.request_count("create", "pods/binding") == 2
    assert any("'create' on 'pods/binding'" in r.getMessage() for r in caplog.records)


def test_uid_precondition_protects_recreated_pod(kube_api, kube_api_kubeconfig) -> None:
    """A pod deleted and re-created under the same name is never bound by a decision about the old one."""
    kube_api.add_node("n1")
    old = kube_api.add_pod("same-name", cpu="100m", scheduler_name="nobody")
    kube_api.remove_pod("same-name")
    kube_api.add_pod("same-name", cpu="100m", scheduler_name="nobody")
    client = Client(load_configuration(str(kube_api_kubeconfig)))
    result = bind(client, PodInfo.from_api(old), "n1")
    assert result.outcome is BindOutcome.GONE  # refused (UID), and the pod read after: a successor
    assert "default/same-name" not in kube_api.bound_pods()
    gone = PodInfo(uid="u-x", namespace="default", name="never-existed")
    assert bind(client, gone, "n1").outcome is BindOutcome.GONE


def test_pod_deleted_while_queued_is_dropped(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1", cpu="1")
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod("doomed", cpu="2", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/doomed" in sched.queue and pod_events(kube_api, "doomed"))
        kube_api.remove_pod("doomed")
        kube_api.wait_for(lambda: "default/doomed" not in sched.queue)
        kube_api.update_node("n1", {"status": {"allocatable": {"cpu": "4"}, "capacity": {"cpu": "4"}}})
        kube_api.add_pod("witness", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/witness" in kube_api.bound_pods())
    assert kube_api.request_count("create", "pods/binding") == 1


def test_malformed_pod_reported_and_others_served(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1")
    bad = our_pod("bad-cpu", container={"resources": {"requests": {"cpu": "lots"}}})
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod(bad, validate=False)
        kube_api.add_pod(
            "bad-annotation",
            cpu="100m",
            scheduler_name=SCHEDULER,
            annotations={"my-network-preference": "warp speed!"},
        )
        kube_api.add_pod("good", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/good" in kube_api.bound_pods())
        kube_api.wait_for(lambda: pod_events(kube_api, "bad-cpu", "FailedScheduling"))
        kube_api.wait_for(lambda: pod_events(kube_api, "bad-annotation", "FailedScheduling"))
        kube_api.wait_for(lambda: (pod_condition(kube_api, "bad-cpu") or {}).get("reason") == "Unschedulable")
        kube_api.update_pod("bad-cpu", {"metadata": {"labels": {"fixed": "no"}}})  # still malformed
        kube_api.add_pod("good-2", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/good-2" in kube_api.bound_pods())
    assert len(pod_events(kube_api, "bad-cpu", "FailedScheduling")) == 1  # same problem: not repeated
    assert "spec.containers[0].resources.requests.cpu" in pod_events(kube_api, "bad-cpu")[0]["message"]
    assert "my-network-preference" in pod_events(kube_api, "bad-annotation")[0]["message"]
    assert set(kube_api.bound_pods()) == {"default/good", "default/good-2"}


def test_unreachable_server_at_start_is_named_and_retried(tmp_path, caplog) -> None:
    kubeconfig, url = unreachable_kubeconfig(tmp_path / "kubeconfig")
    sched = make_scheduler(kubeconfig)
    caplog.set_level(logging.ERROR, logger="scheduler")
    sleeps: list[float] = []
    assert sched.check_server(attempts=3, sleep=sleeps.append) is False
    assert sleeps == [1.0, 2.0]  # backoff between attempts
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert all(f"cannot reach the Kubernetes API server at {url}" in m for m in messages)


def test_health_ready_and_metrics_endpoints(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_node("n1")
    with running_scheduler(kube_api_kubeconfig) as sched:
        kube_api.add_pod("m", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/m" in kube_api.bound_pods())
        base = f"http://127.0.0.1:{sched.servers[0].port}"
        assert urllib.request.urlopen(f"{base}/healthz").read() == b"ok\n"
        assert urllib.request.urlopen(f"{base}/readyz").read().startswith(b"ok")
        kube_api.wait_for(
            lambda: (
                b'scheduler_schedule_attempts_total{profile="my-custom-scheduler",result="scheduled"} 1.0'
                in urllib.request.urlopen(f"{base}/metrics").read()
            )
        )
        text = urllib.request.urlopen(f"{base}/metrics").read().decode()
    for name in (
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        'scheduler_pending_pods{queue="active"}',
        "scheduler_binding_duration_seconds_bucket",
    ):
        assert name in text


def test_forbidden_list_names_the_permission_and_recovers(kube_api, kube_api_kubeconfig, caplog) -> None:
    kube_api.add_node("n1")
    kube_api.fail_next(1, 403, verb="list", resource="pods")
    caplog.set_level(logging.ERROR, logger="scheduler")
    with running_scheduler(kube_api_kubeconfig):
        kube_api.add_pod("after-rbac-fix", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/after-rbac-fix" in kube_api.bound_pods())
    assert any("needs 'list/watch' on 'pods'" in r.getMessage() for r in caplog.records)


def test_wrong_token_is_reported_as_credentials_problem(tmp_path, caplog) -> None:
    with running_server(token="right") as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kc")
        kubeconfig.write_text(kubeconfig.read_text().replace("right", "wrong"))
        caplog.set_level(logging.ERROR, logger="scheduler")
        sched = make_scheduler(kubeconfig)
        sched.start()
        try:
            server.wait_for(lambda: any("401 Unauthorized" in r.getMessage() for r in caplog.records))
        finally:
            sched.stop()


_SERVER_VERBS = {"LIST": "list", "WATCH": "watch", "GET": "get", "POST": "create", "PUT": "update",
                 "PATCH": "patch", "DELETE": "delete"}


def test_client_counts_every_request_as_the_server_records_it(kube_api, kube_api_kubeconfig) -> None:
    """The benchmark's requests per bound pod come from the client's own counts (served on /metrics): they
    must match, by verb and resource, what the API server saw."""
    kube_api.add_node("n1")
    with running_scheduler(kube_api_kubeconfig) as sched:
        for name in ("a", "b", "c"):
            kube_api.add_pod(name, cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == 3)
        assert sched.recorder.flush(10)
        requests, watch_bytes = sched.client.counts.totals()
        seen = Counter((r.verb, r.resource) for r in kube_api.requests)
        text = urllib.request.urlopen(f"http://127.0.0.1:{sched.servers[0].port}/metrics").read().decode()
    assert requests[("POST", "pods/binding")] == 3 and requests[("POST", "events.events.k8s.io")] == 3
    for (verb, resource), n in requests.items():
        if not resource.startswith("/"):  # /version: outside the resource tree the server's records name
            # the test server records the plural and subresource without the API group
            plural, _, sub = resource.partition("/")
            recorded = plural.split(".")[0] + (f"/{sub}" if sub else "")
            assert seen[(_SERVER_VERBS[verb], recorded)] == n, (verb, resource)
    assert 'scheduler_client_requests_total{resource="pods/binding",verb="POST"} 3.0' in text
    assert watch_bytes["pods"] > 0  # the three bindings came back as MODIFIED pods
    assert 'scheduler_watch_decoded_bytes_total{resource="pods"}' in text
