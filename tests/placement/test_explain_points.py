"""`explain` beyond the filters, pure (no cluster): the gang scheduler of examples/coscheduling as a lab enables
it, on a cluster given as YAML. A member whose PodGroup is not complete is gated at PreEnqueue with the
plugin's reason; a member of a complete gang that would be the first placed would wait at Permit (for whom,
how long, why); the last member needed fits and would be bound; a plugin's API write is refused, not sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import yaml

from labkit.placement.explain import SchedulerConfig, cluster_view, explain_pod, infer_state
from labkit.placement.explain_points import WhatIfHandle
from scheduler.config import parse_config
from scheduler.framework import Plugin, Status, load_registry
from tests import bundled_plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coscheduling"
SCHEDULER = "my-custom-scheduler"
PODGROUPS = "scheduling.x-k8s.io/v1alpha1/podgroups"

CLUSTER = """
kind: Node
metadata: {name: n1, uid: n1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: n2, uid: n2}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train, namespace: default, creationTimestamp: "2026-11-28T10:00:00Z"}
spec: {minMember: 3, scheduleTimeoutSeconds: 45}
"""


def member(name: str, node: str | None = None, gang: str = "train") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "status": {"phase": "Running" if node else "Pending"},
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": {"scheduling.x-k8s.io/pod-group": gang}}}


def gang_config(extra: list[Plugin] = ()) -> SchedulerConfig:
    registry = load_registry([str(EXAMPLE)], base=bundled_plugins.registry(), entry_points=False)
    if extra:
        registry = registry.with_plugins(list(extra), "test")
    enabled = [{"name": "Coscheduling"}, *({"name": p.name} for p in extra)]
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": SCHEDULER,
                            "plugins": {"multiPoint": {"enabled": enabled},
                                        "queueSort": {"disabled": [{"name": "PrioritySort"}]}}}]}
    return SchedulerConfig(parse_config(config, "test", registry), "test config")


def explain(pods: list[dict[str, Any]], name: str, config: SchedulerConfig | None = None):
    config = config or gang_config()
    docs = list(yaml.safe_load_all(CLUSTER))
    nodes = [d for d in docs if d["kind"] == "Node"]
    groups = [d for d in docs if d["kind"] == "PodGroup"]
    profile = config.profile(SCHEDULER)
    view = cluster_view(nodes, pods, [], watches=profile.watches, objects={PODGROUPS: groups})
    pod = next(p for p in pods if p["metadata"]["name"] == name)
    return explain_pod(pod, view, profile, config.source)


def test_a_member_of_an_incomplete_gang_is_gated_at_pre_enqueue_with_the_plugins_reason() -> None:
    why = explain([member("train-0"), member("train-1")], "train-0")
    assert why.outcome == "gated"
    assert why.points is not None and why.points.point == "PreEnqueue" and why.points.plugin == "Coscheduling"
    assert why.points.reason == "PodGroup default/train has 2 of its minMember 3 pods"
    assert why.message.startswith("gated at PreEnqueue by Coscheduling: PodGroup default/train has 2 of its "
                                  "minMember 3 pods; the scheduler does not try it until that changes")
    report = why.as_json()
    assert report["outcome"] == "gated" and report["points"]["plugin"] == "Coscheduling"
    infer_state(why)
    assert why.likely_state == "gated at PreEnqueue by Coscheduling, out of the scheduler's active queue"
    assert why.inferred is not None and why.inferred.startswith("inferred, not read")


def test_the_first_member_of_a_complete_gang_would_wait_at_permit() -> None:
    why = explain([member(f"train-{i}") for i in range(3)], "train-0")
    assert why.outcome == "would_wait" and why.chosen in ("n1", "n2")
    points = why.points
    assert points is not None and points.point == "Permit" and points.node == why.chosen
    assert [(w.plugin, w.timeout, w.reason) for w in points.waits] == [
        ("Coscheduling", 45.0, "PodGroup default/train has 1 of its minMember 3 pods placed")]
    other = "n2" if why.chosen == "n1" else "n1"
    assert why.message == (f"would choose {why.chosen} (tied with {other}; which of them the scheduler takes depends on where its search starts); "
                           "reserved there, it would wait at Permit for Coscheduling (up to 45s): PodGroup "
                           "default/train has 1 of its minMember 3 pods placed; it is bound once every waiting "
                           "plugin allows it, and not bound if one rejects it or its time runs out")
    infer_state(why, "2026-11-28T10:01:00Z: rejected due to timeout after waiting 45s at plugin Coscheduling")
    assert why.likely_state == f"reserved on {why.chosen}, waiting at Permit for Coscheduling"
    assert "its newest FailedScheduling event: 2026-11-28T10:01:00Z: rejected due to timeout" in why.inferred
    assert why.as_json()["points"]["waits"] == [{"plugin": "Coscheduling", "timeout": 45.0, "reason": (
        "PodGroup default/train has 1 of its minMember 3 pods placed")}]


def test_the_member_completing_the_gang_fits_and_would_be_bound() -> None:
    pods = [member("train-0", "n1"), member("train-1", "n2"), member("train-2")]
    why = explain(pods, "train-2")
    assert why.outcome == "would_bind" and why.points is not None and why.points.waits == []
    assert why.message.startswith("would choose ")
    infer_state(why)
    assert why.likely_state is None


def test_a_bound_member_is_explained_as_bound_without_the_points() -> None:
    why = explain([member("train-0", "n1"), member("train-1", "n2"), member("train-2", "n1")], "train-0")
    assert why.outcome == "bound" and why.points is None and why.bound_to == "n1"


def test_a_pod_outside_any_gang_passes_every_point() -> None:
    why = explain([member("solo", gang="")], "solo")
    assert why.outcome == "would_bind"


def test_a_member_no_node_fits_stops_before_reserve() -> None:
    big = member("train-0")
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    why = explain([big, member("train-1"), member("train-2")], "train-0")
    assert why.outcome == "unschedulable" and why.points is None
    assert why.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")


class Annotator:
    """A Permit plugin that writes through the API (a status patch) and then rejects: the write is refused and
    named, the rejection shown with the plugin's reason, and Reserve undone."""

    unreserved: ClassVar[list[str]] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def reserve(self, cycle: Any, pod: Any, node: str) -> None:
        return None

    def unreserve(self, cycle: Any, pod: Any, node: str) -> None:
        Annotator.unreserved.append(pod.name)

    def permit(self, cycle: Any, pod: Any, node: str) -> Status:
        from scheduler.framework import ApiCallError, Code
        try:
            self.handle.api.request("PATCH", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}", {"x": 1})
        except ApiCallError as err:
            return Status(Code.UNSCHEDULABLE, (f"could not annotate: {err.message}",))
        return Status(Code.SUCCESS)


def test_a_plugins_write_is_refused_and_named_and_reserve_is_undone() -> None:
    plugin = Plugin(name="Annotator", setup=Annotator)
    Annotator.unreserved.clear()
    why = explain([member("solo", gang="")], "solo", gang_config([plugin]))
    assert why.outcome == "rejected" and why.points is not None
    assert (why.points.point, why.points.plugin) == ("Permit", "Annotator")
    assert why.message.startswith(f"would choose {why.chosen}")
    assert why.message.endswith("; there it would be rejected at Permit by Annotator: could not annotate: explain "
                                "is a what-if: it changes nothing in the cluster")
    assert why.points.refused_calls == ["PATCH /api/v1/namespaces/default/pods/solo"]
    assert any(n.startswith("API calls the plugins made, refused here") for n in why.notes)
    assert Annotator.unreserved == ["solo"]


def test_the_what_if_handle_lets_reads_through_and_binds_nothing() -> None:
    handle = WhatIfHandle(SCHEDULER, {}, reader=lambda path: {"read": path})
    assert handle.api.request("GET", "/api/v1/namespaces/default") == {"read": "/api/v1/namespaces/default"}
    assert handle.waiting_pods() == []
    from scheduler.testing import pod_info
    status = handle.bind(pod_info(name="p"), "n1")
    assert not status.ok and handle.api.refused == ["POST /api/v1/namespaces/default/pods/p/binding"]


def test_a_pod_with_scheduling_gates_is_gated_before_any_plugin_as_read_from_its_spec() -> None:
    gated = member("train-0")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "example.com/review"}]
    why = explain([gated, member("train-1"), member("train-2")], "train-0")
    assert why.outcome == "gated" and why.points is not None and why.points.plugin == "SchedulingGates"
    assert why.points.reason == "waiting for scheduling gates: [example.com/quota example.com/review]"
    infer_state(why)
    assert why.likely_state == ("gated by its spec.schedulingGates (example.com/quota, example.com/review), "
                                "read from the pod")
    assert why.inferred is None


LOG = """2026-11-28 18:20:00,001 INFO scheduler.runtime.schedule_one: pod default/train-1 scheduled to n2 (2 feasible of 2 evaluated)
2026-11-28 18:20:01,123 INFO scheduler.runtime.schedule_one: pod default/train-0 reserved on n2, waiting at Permit for Coscheduling
2026-11-28 18:20:02,000 INFO scheduler.runtime.schedule_one: pod default/other-0 reserved on n1, waiting at Permit for Coscheduling
2026-11-28 18:20:03,000 INFO scheduler.runtime.schedule_one: pod default/other-0 not bound to n1: rejected due to timeout after waiting 1s at plugin Coscheduling (Coscheduling)
"""


def _words(text: str) -> dict:
    from labkit.placement.explain_log import _LINE, LogWord
    words = {}
    for line in text.splitlines():
        found = _LINE.match(line)
        if found:
            words[found["key"]] = LogWord(found["time"], found["what"], "pod kube-system/s-0")
    return words


def test_the_schedulers_log_line_turns_the_permit_inference_into_a_reading() -> None:
    from labkit.placement.explain_log import apply_log
    why = explain([member(f"train-{i}") for i in range(3)], "train-0")
    infer_state(why)
    apply_log(why, _words(LOG), None)
    assert why.likely_state == "reserved on n2, waiting at Permit for Coscheduling"  # the scheduler's node
    assert why.inferred is None
    assert why.read_from == ("the scheduler's log (pod kube-system/s-0) at 2026-11-28 18:20:01: \"pod "
                             "default/train-0 reserved on n2, waiting at Permit for Coscheduling\"")
    assert why.as_json()["read_from"] == why.read_from


def test_a_wait_the_log_says_ended_is_not_shown_as_held() -> None:
    from labkit.placement.explain_log import apply_log
    pods = [member(f"other-{i}", gang="train") for i in range(3)]
    why = explain(pods, "other-0")
    infer_state(why)
    apply_log(why, _words(LOG), None)
    assert why.likely_state == "not held at Permit: the scheduler's last word on it is in its log"
    assert why.read_from is not None and "not bound to n1: rejected due to timeout" in why.read_from


def test_without_a_log_line_the_inference_stands_and_says_why() -> None:
    from labkit.placement.explain_log import apply_log
    why = explain([member(f"train-{i}") for i in range(3)], "train-0")
    infer_state(why)
    apply_log(why, {}, "the scheduler's log cannot be read: the scheduler is not deployed")
    assert why.inferred is not None and why.read_from is None
    assert why.notes[-1] == ("the scheduler's log cannot be read: the scheduler is not deployed: the Permit wait "
                             "is inferred")
