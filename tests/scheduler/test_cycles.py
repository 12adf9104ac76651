"""The in-process cycle driver (scheduler.testing.Cycles): each rule of kube-scheduler's cycle it models, proved
with small plugins that record what the framework called them with."""

from __future__ import annotations

import pytest

from scheduler.framework import SKIP, Code, Plugin, Status
from scheduler.testing import Cycles, Gated, node_object, pod_object

CALLS: list[tuple[str, str, str]] = []  # (plugin, point, pod name), in order


@pytest.fixture(autouse=True)
def _fresh_calls():
    CALLS.clear()


def recording(name: str, *, fail_reserve: str = "", raise_at: str = "", pre_bind: Status | None = None,
              bind: Status | None = None, wait: float = 0.0, wait_label: str = "") -> Plugin:
    """A plugin with Reserve/Unreserve, Permit, PreBind and Bind that records each call; it fails Reserve for
    the pod named ``fail_reserve``, raises at the point ``raise_at``, answers PreBind and Bind as given, and
    holds pods (labelled ``wait_label`` when set) at Permit for ``wait`` seconds."""

    class Setup:
        def __init__(self, args, handle):
            self.handle = handle

        def _called(self, point, pod):
            CALLS.append((name, point, pod.name))
            if point == raise_at:
                raise RuntimeError(f"boom in {point}")

        def reserve(self, cycle, pod, node):
            self._called("reserve", pod)
            if pod.name == fail_reserve:
                return Status(Code.UNSCHEDULABLE, ("no room in the ledger",))
            return None

        def unreserve(self, cycle, pod, node):
            self._called("unreserve", pod)

        def permit(self, cycle, pod, node):
            self._called("permit", pod)
            if wait and (not wait_label or wait_label in pod.labels):
                return Status(Code.WAIT, timeout=wait)
            return None

        def pre_bind(self, cycle, pod, node):
            self._called("pre_bind", pod)
            return pre_bind

        def bind(self, cycle, pod, node):
            self._called("bind", pod)
            return bind if bind is not None else SKIP

    return Plugin(name=name, setup=Setup)


def cluster(nodes=("n1",), cpu="4"):
    return "\n---\n".join(
        f"kind: Node\nmetadata: {{name: {n}}}\nstatus: {{allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: '110'}}}}"
        for n in nodes)


def pod(name, cpu="1", **keywords):
    return pod_object(name=name, requests={"cpu": cpu}, **keywords)


def test_pods_are_bound_with_a_scheduled_event_and_assumed_pods_count_for_the_next_decision():
    sim = Cycles(cluster(cpu="1"))
    sim.add_pod(pod("a"))
    sim.add_pod(pod("b"))
    sim.run_until_idle()
    assert sim.placements == {"default/a": "n1"}
    assert [(e.pod, e.reason) for e in sim.events] == [("default/a", "Scheduled"), ("default/b", "FailedScheduling")]
    assert sim.events[0].message == "Successfully assigned default/a to n1"
    assert sim.events[1].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert sim.api.bindings == [("default/a", "n1")]
    assert sim.queued == {"default/b": "unschedulable"}


def test_a_pod_no_node_fits_is_tried_again_when_the_cluster_changes():
    sim = Cycles(cluster(cpu="1"))
    sim.add_pod(pod("big", cpu="2"))
    sim.run_until_idle()
    assert sim.placements == {}
    sim.add_node(node_object(name="n2", allocatable={"cpu": "4"}))
    sim.advance(1)  # its first backoff (1 s) ends
    assert sim.placements == {"default/big": "n2"}


def test_a_failed_reserve_runs_every_unreserve_in_reverse_and_forgets_the_pod():
    plugins = [recording("First"), recording("Second"), recording("Third", fail_reserve="a")]
    sim = Cycles(cluster(), plugins=plugins)
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert [(p, point) for p, point, _ in CALLS] == [
        ("First", "reserve"), ("Second", "reserve"), ("Third", "reserve"),
        ("Third", "unreserve"), ("Second", "unreserve"), ("First", "unreserve")]
    failed = sim.events_for("default/a")[-1]
    assert (failed.reason, failed.plugin, failed.message) == ("FailedScheduling", "Third", "no room in the ledger")
    assert sim.placements == {} and sim.assumed == {} and not sim.nodes["n1"].pods
    assert sim.api.calls == []


def test_a_permit_wait_ends_in_rejection_at_its_timeout_and_holds_nothing_after():
    sim = Cycles(cluster(), plugins=[recording("Hold", wait=10)])
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert list(sim.waiting) == ["default/a"] and sim.assumed == {"default/a": "n1"}
    assert sim.waiting["default/a"].pending_plugins() == ["Hold"]
    sim.advance(9.5)
    assert list(sim.waiting) == ["default/a"]
    sim.advance(0.5)
    assert sim.waiting == {} and sim.assumed == {} and sim.placements == {} and not sim.nodes["n1"].pods
    failed = sim.events_for("default/a")[-1]
    assert (failed.plugin, failed.message) == ("Hold", "rejected due to timeout after waiting 10s at plugin Hold")
    assert ("Hold", "unreserve", "a") in CALLS


def test_a_waiting_pod_allowed_by_another_pods_permit_is_bound_then():
    class Release:
        def __init__(self, args, handle):
            self.handle = handle

        def permit(self, cycle, pod, node):
            if "hold" in pod.labels:
                return Status(Code.WAIT, timeout=30)
            for waiting in self.handle.waiting_pods():
                waiting.allow("Release")
            return None

    sim = Cycles(cluster(), plugins=[Plugin(name="Release", setup=Release)])
    sim.add_pod(pod("held", labels={"hold": "yes"}))
    sim.run_until_idle()
    assert list(sim.waiting) == ["default/held"]
    sim.add_pod(pod("releaser"))
    sim.run_until_idle()
    assert sim.placements == {"default/held": "n1", "default/releaser": "n1"}
    assert sim.waiting == {}


def test_a_bind_plugin_that_skips_passes_the_pod_to_the_next_one():
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                  "multiPoint": {"enabled": [{"name": "Skipper"}]},
                  "bind": {"disabled": [{"name": "*"}], "enabled": [{"name": "Skipper"}, {"name": "DefaultBinder"}]}}}]}
    sim = Cycles(cluster(), plugins=[recording("Skipper")], config=config)
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert ("Skipper", "bind", "a") in CALLS
    assert sim.api.bindings == [("default/a", "n1")] and sim.placements == {"default/a": "n1"}


def test_the_first_bind_plugin_that_binds_decides_and_the_default_binder_is_not_called():
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                  "multiPoint": {"enabled": [{"name": "Own"}]},
                  "bind": {"disabled": [{"name": "*"}], "enabled": [{"name": "Own"}, {"name": "DefaultBinder"}]}}}]}
    sim = Cycles(cluster(), plugins=[recording("Own", bind=Status(Code.SUCCESS))], config=config)
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert sim.placements == {"default/a": "n1"} and sim.api.bindings == []


def test_a_failing_pre_bind_binds_nothing_and_undoes_the_reservation():
    sim = Cycles(cluster(), plugins=[recording("Devices", pre_bind=Status(Code.ERROR, ("allocation write failed",)))])
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert sim.api.bindings == [] and sim.placements == {} and sim.assumed == {} and not sim.nodes["n1"].pods
    assert ("Devices", "unreserve", "a") in CALLS
    failed = sim.events_for("default/a")[-1]
    assert (failed.plugin, failed.message) == ("Devices", "allocation write failed")
    assert sim.queued == {"default/a": "backoff"}


def test_a_refused_binding_is_retried_after_its_backoff():
    sim = Cycles(cluster())
    sim.api.fail("POST", "/pods/a/binding", status=500, message="etcd is away")
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    failed = sim.events_for("default/a")[-1]
    assert (failed.plugin, failed.message) == ("DefaultBinder", "binding rejected: etcd is away")
    assert sim.placements == {} and not sim.nodes["n1"].pods
    sim.advance(1)
    assert sim.placements == {"default/a": "n1"} and sim.api.bindings == [("default/a", "n1")]


def test_a_plugin_that_raises_fails_that_pod_with_an_error_naming_it_and_the_others_go_on():
    class Boom:
        def __init__(self, args, handle):
            pass

        def permit(self, cycle, pod, node):
            if pod.name == "bad":
                raise RuntimeError("boom")

    sim = Cycles(cluster(), plugins=[Plugin(name="Boom", setup=Boom)])
    sim.add_pod(pod("bad"))
    sim.add_pod(pod("good"))
    sim.run_until_idle()
    assert sim.placements == {"default/good": "n1"}
    failed = sim.events_for("default/bad")[-1]
    assert (failed.plugin, failed.message) == ("Boom", 'running Permit plugin "Boom": raised RuntimeError: boom')
    assert sim.assumed == {} and [p.name for p in sim.nodes["n1"].pods.values()] == ["good"]


def test_a_filter_that_raises_is_named_in_the_error_event():
    def pre_filter(pod, args):
        raise ValueError("cannot read")

    sim = Cycles(cluster(), plugins=[Plugin(name="Broken", pre_filter=pre_filter)])
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    failed = sim.events_for("default/a")[-1]
    assert (failed.plugin, failed.message) == ("Broken", 'running PreFilter plugin "Broken": raised ValueError: cannot read')
    assert sim.queued == {"default/a": "backoff"}


def test_errors_back_off_one_second_doubling_up_to_ten():
    sim = Cycles(cluster(), plugins=[recording("Flaky", raise_at="permit")])
    sim.add_pod(pod("a"))
    sim.advance(40)
    assert [e.at for e in sim.events_for("default/a")] == [0, 1, 3, 7, 15, 25, 35]


def test_pre_enqueue_keeps_a_pod_out_until_a_change_lets_it_in():
    class Gate:
        def __init__(self, args, handle):
            self.handle = handle

        def pre_enqueue(self, pod):
            if self.handle.objects("v1/configmaps").get_object("default", "open") is None:
                return Status(Code.UNSCHEDULABLE, ("the gate is closed",))
            return None

    sim = Cycles(cluster(), plugins=[Plugin(name="Gate", setup=Gate, watches=("v1/configmaps",))])
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    assert sim.gated == {"default/a": Gated("Gate", "the gate is closed")}
    assert sim.events == [] and sim.placements == {}
    sim.put_object("v1/configmaps", {"metadata": {"name": "open", "namespace": "default"}})
    sim.run_until_idle()
    assert sim.gated == {} and sim.placements == {"default/a": "n1"}


def test_the_queue_follows_the_profiles_sort_key():
    class ByLabel:
        def __init__(self, args, handle):
            pass

        def sort_key(self, pod, enqueued_at):
            return pod.labels.get("order", "")

    sim = Cycles(cluster(), plugins=[Plugin(name="ByLabel", setup=ByLabel)])
    for name, order in (("x", "3"), ("y", "1"), ("z", "2")):
        sim.add_pod(pod(name, labels={"order": order}))
    sim.run_until_idle()
    assert [e.pod for e in sim.events] == ["default/y", "default/z", "default/x"]


def test_a_deleted_waiting_pod_gives_back_its_reservation_and_is_not_retried():
    sim = Cycles(cluster(), plugins=[recording("Hold", wait=10)])
    sim.add_pod(pod("a"))
    sim.run_until_idle()
    sim.delete_pod("default/a")
    assert sim.waiting == {} and sim.assumed == {} and not sim.nodes["n1"].pods and sim.queued == {}
    assert ("Hold", "unreserve", "a") in CALLS


def test_a_config_that_cannot_run_standalone_is_refused():
    class Sort:
        def __init__(self, args, handle):
            pass

        def sort_key(self, pod, enqueued_at):
            return 0

    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"multiPoint": {"enabled": [{"name": "Sort"}]}}}]}
    with pytest.raises(ValueError, match="one queue sort plugin required"):
        Cycles(cluster(), plugins=[Plugin(name="Sort", setup=Sort)], config=config)


def test_post_filters_run_in_order_until_one_answers_unresolvable():
    def post_filter_plugin(name, code):
        class Setup:
            def __init__(self, args, handle):
                pass

            def post_filter(self, cycle, pod, failures):
                CALLS.append((name, "post_filter", pod.name))
                return Status(code, (f"{name} gives up",))

        return Plugin(name=name, setup=Setup)

    plugins = [post_filter_plugin("Soft", Code.UNSCHEDULABLE),
               post_filter_plugin("Final", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
               post_filter_plugin("Never", Code.UNSCHEDULABLE)]
    sim = Cycles(cluster(cpu="1"), plugins=plugins)
    sim.add_pod(pod("big", cpu="2"))
    sim.run_until_idle()
    assert [p for p, _, _ in CALLS] == ["Soft", "Final"]
    failed = sim.events_for("default/big")[-1]
    assert failed.message.endswith(", Soft gives up, Final gives up") and failed.plugin == "Soft"
    assert sim.queued == {"default/big": "unschedulable"}


def test_a_post_filter_that_raises_is_an_error_retried_with_backoff():
    class Raises:
        def __init__(self, args, handle):
            pass

        def post_filter(self, cycle, pod, failures):
            raise RuntimeError("lost")

    sim = Cycles(cluster(cpu="1"), plugins=[Plugin(name="Raises", setup=Raises)])
    sim.add_pod(pod("big", cpu="2"))
    sim.run_until_idle()
    failed = sim.events_for("default/big")[-1]
    assert failed.message.endswith('running PostFilter plugin "Raises": raised RuntimeError: lost')
    assert sim.queued == {"default/big": "backoff"}


def test_with_evict_preemption_deletes_its_victims_and_the_preemptor_takes_their_room():
    sim = Cycles(cluster(("n1", "n2"), cpu="2"), evict=True)
    evicted = []
    sim.on_evict = lambda victim, preemptor: evicted.append((victim.key, preemptor.key))
    for name in ("low-1", "low-2"):
        sim.add_pod(pod(name, cpu="2"))
    sim.run_until_idle()
    sim.add_pod(pod("high", cpu="2", spec={"priority": 100}))
    sim.run_until_idle()
    assert len(evicted) == 1 and evicted[0][1] == "default/high" and "default/high" not in sim.placements
    sim.advance(1)  # the victim's deletion sent the preemptor back to the queue, after its backoff
    victim = evicted[0][0]
    assert victim not in sim.placements and sim.placements["default/high"] == sim.nominations["default/high"]
    assert sorted(sim.placements) == sorted({"default/low-1", "default/low-2", "default/high"} - {victim})


def test_without_evict_preemption_only_nominates():
    sim = Cycles(cluster(("n1",), cpu="2"))
    sim.add_pod(pod("low", cpu="2"))
    sim.run_until_idle()
    sim.add_pod(pod("high", cpu="2", spec={"priority": 100}))
    sim.run_until_idle()
    assert sim.nominations == {"default/high": "n1"} and sim.placements == {"default/low": "n1"}


def test_a_queue_of_many_pods_is_taken_in_order_and_a_pending_arrival_does_not_retry_the_unschedulable():
    sim = Cycles(cluster(("n1",), cpu="3"))
    for i in range(5):
        sim.add_pod(pod(f"p{i}", cpu="1"))
    sim.run_until_idle()
    assert sorted(sim.placements) == ["default/p0", "default/p1", "default/p2"]
    assert sim.queued == {"default/p3": "unschedulable", "default/p4": "unschedulable"}
    sim.add_pod(pod("late", cpu="1"))  # takes no room: the two stay where they are; the new one is tried
    assert sim.queued["default/p3"] == "unschedulable" and sim.queued["default/late"] == "active"
    sim.delete_pod("default/p0")  # room freed: they are tried again
    sim.advance(1)
    assert len([k for k in sim.placements if k != "default/p0"]) == 3
