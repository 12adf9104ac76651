"""The binding half of the framework in the real scheduler against the API test server: PreEnqueue gating on a
watched kind, Reserve and Unreserve, Permit holding pods without blocking the loop (allowed by a sibling's cycle,
or timed out), PreBind writing through the handle's API, and a raising plugin failing only that pod's binding.
The plugins are small test plugins written here against the public API, as a user's would be."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework import Args, Code, CycleState, Handle, Plugin, Status, build_profiles
from scheduler.model import PodInfo
from scheduler.runtime.client import Client, load_configuration
from scheduler.runtime.scheduler import RuntimeSettings, Scheduler
from tests import bundled_plugins
from tests.scheduler_api.harness import SCHEDULER, pod_events

pytestmark = pytest.mark.api

CALLS: list[tuple[str, str]] = []  # (point, pod name), in the order the plugins saw them
_LOCK = threading.Lock()


def _record(point: str, pod: PodInfo) -> None:
    with _LOCK:
        CALLS.append((point, pod.name))


class PairArgs(Args):
    timeoutSeconds: float = 5.0


class Pair:
    """Pods labelled pair=<name> are bound two at a time: the first waits at Permit, the second allows it."""

    def __init__(self, args: PairArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        _record("reserve", pod)
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        _record("unreserve", pod)

    def permit(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        pair = pod.labels.get("pair")
        if pair is None:
            return None
        waiting = [w for w in self.handle.waiting_pods() if w.pod.labels.get("pair") == pair]
        if not waiting:
            return Status(Code.WAIT, (f"waiting for the other pod of pair {pair}",), timeout=self.args.timeoutSeconds)
        for sibling in waiting:
            sibling.allow("Pair")
        return None

    def pre_bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        _record("pre_bind", pod)
        self.handle.api.patch_pod(pod, {"metadata": {"annotations": {"example.com/paired-on": node}}})
        return None


class Gate:
    """PreEnqueue: a pod labelled gate=<name> waits until the ConfigMap <name> says open: "true"."""

    def __init__(self, args: Args, handle: Handle) -> None:
        self.handle = handle

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        name = pod.labels.get("gate")
        if name is None:
            return None
        gate = self.handle.objects("v1/configmaps").get_object(pod.namespace, name)
        if gate is not None and (gate.get("data") or {}).get("open") == "true":
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"gate {name} is closed",))


class Boom:
    """PreBind raises for pods labelled boom=yes."""

    def __init__(self, args: Args, handle: Handle) -> None:
        pass

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        _record("boom-reserve", pod)
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        _record("boom-unreserve", pod)

    def pre_bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        if pod.labels.get("boom") == "yes":
            raise RuntimeError("the device driver is away")
        return None


def _fragile_pre_filter(pod: PodInfo, args: Args) -> None:
    """PreFilter raising for pods labelled fragile=yes (a plugin's bug)."""
    if pod.labels.get("fragile") == "yes":
        raise ValueError("cannot read the pod")


PLUGINS = [Plugin("Pair", args=PairArgs, setup=Pair, writes=("v1/pods",)),
           Plugin("Gate", setup=Gate, watches=("v1/configmaps",)),
           Plugin("Boom", setup=Boom),
           Plugin("Fragile", pre_filter=_fragile_pre_filter)]


def _scheduler(kubeconfig: Any, pair_timeout: float = 5.0) -> Scheduler:
    registry = bundled_plugins.registry().with_plugins(PLUGINS, "tests/scheduler_api/test_binding_cycle.py")
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "leaderElection": {"leaderElect": False},
              "profiles": [{"schedulerName": SCHEDULER,
                            "plugins": {"multiPoint": {"enabled": [{"name": n} for n in ("Pair", "Gate", "Boom", "Fragile")]}},
                            "pluginConfig": [{"name": "Pair", "args": {"timeoutSeconds": pair_timeout}}]}]}
    cfg = parse_config(config, "config", registry)
    assert cfg.point_problems() == []
    client = Client(load_configuration(str(kubeconfig)), qps=0, burst=100, pool_size=16)
    return Scheduler(client, build_profiles(cfg, registry), RuntimeSettings(serve=(), seed=1, bind_workers=2))


@pytest.fixture
def scheduler(kube_api, kube_api_kubeconfig):
    CALLS.clear()
    sched = _scheduler(kube_api_kubeconfig)
    sched.start()
    assert sched.wait_synced(10)
    yield sched
    sched.stop()


def _bound(kube_api: Any, name: str) -> str | None:
    return ((kube_api.get_object("pods", name, "default") or {}).get("spec") or {}).get("nodeName")


def _node(kube_api: Any, scheduler: Scheduler) -> None:
    """A node the scheduler has seen before the test's pods arrive."""
    kube_api.add_node("n1", cpu="4")
    kube_api.wait_for(lambda: scheduler.cache.node("n1"))


def test_pair_waits_at_permit_then_both_bind_with_pre_bind_writes(kube_api, scheduler) -> None:
    _node(kube_api, scheduler)
    kube_api.add_pod("a", scheduler_name=SCHEDULER, labels={"pair": "p"})
    kube_api.wait_for(lambda: scheduler.waiting.get(kube_api.get_object("pods", "a", "default")["metadata"]["uid"]))
    assert _bound(kube_api, "a") is None  # held at Permit, not bound
    # The loop is free while "a" waits: an unrelated pod is bound meanwhile.
    kube_api.add_pod("solo", scheduler_name=SCHEDULER)
    kube_api.wait_for(lambda: _bound(kube_api, "solo"))
    assert _bound(kube_api, "a") is None
    kube_api.add_pod("b", scheduler_name=SCHEDULER, labels={"pair": "p"})
    kube_api.wait_for(lambda: _bound(kube_api, "a") and _bound(kube_api, "b"))
    for name in ("a", "b"):
        pod = kube_api.get_object("pods", name, "default")
        assert pod["metadata"]["annotations"]["example.com/paired-on"] == "n1"
        kube_api.wait_for(lambda name=name: pod_events(kube_api, name, "Scheduled"))
    assert ("unreserve", "a") not in CALLS and ("unreserve", "b") not in CALLS
    assert len(scheduler.waiting) == 0


def test_permit_timeout_undoes_the_reservation_and_retries(kube_api, kube_api_kubeconfig) -> None:
    CALLS.clear()
    kube_api.add_node("n1", cpu="4")
    sched = _scheduler(kube_api_kubeconfig, pair_timeout=0.5)
    sched.start()
    try:
        assert sched.wait_synced(10)
        kube_api.add_pod("lonely", scheduler_name=SCHEDULER, labels={"pair": "q"})
        kube_api.wait_for(lambda: pod_events(kube_api, "lonely", "FailedScheduling"), timeout=10)
        event = pod_events(kube_api, "lonely", "FailedScheduling")[0]
        assert event["message"] == "rejected due to timeout after waiting 0.5s at plugin Pair"
        assert _bound(kube_api, "lonely") is None
        kube_api.wait_for(lambda: ("unreserve", "lonely") in CALLS)
        # Unreserve runs every Reserve plugin in reverse order: Boom (enabled after Pair) first.
        undo = [point for point, name in CALLS if name == "lonely" and "unreserve" in point]
        assert undo[:2] == ["boom-unreserve", "unreserve"]
        # It waits as unschedulable for a cluster change (Pair declares no events: any will do), then is tried
        # again, and its room was given back: the second reservation fits on the same 4-cpu node.
        assert sched.queue.where("default/lonely") == "unschedulable"
        kube_api.add_node("n2", cpu="4")
        kube_api.wait_for(lambda: CALLS.count(("reserve", "lonely")) >= 2, timeout=10)
    finally:
        sched.stop()


def test_a_raising_pre_bind_fails_that_binding_only(kube_api, scheduler) -> None:
    _node(kube_api, scheduler)
    kube_api.add_pod("bad", scheduler_name=SCHEDULER, labels={"boom": "yes"})
    kube_api.add_pod("good", scheduler_name=SCHEDULER)
    kube_api.wait_for(lambda: pod_events(kube_api, "bad", "FailedScheduling"))
    kube_api.wait_for(lambda: _bound(kube_api, "good"))
    message = pod_events(kube_api, "bad", "FailedScheduling")[0]["message"]
    assert message == 'running PreBind plugin "Boom": raised RuntimeError: the device driver is away'
    assert _bound(kube_api, "bad") is None
    kube_api.wait_for(lambda: ("boom-unreserve", "bad") in CALLS and ("unreserve", "bad") in CALLS)


def test_pre_enqueue_gates_until_the_watched_object_opens_it(kube_api, scheduler) -> None:
    _node(kube_api, scheduler)
    kube_api.add_pod("held", scheduler_name=SCHEDULER, labels={"gate": "g"})
    kube_api.wait_for(lambda: scheduler.queue.gated())
    [(pod, status)] = scheduler.queue.gated()
    assert (pod.name, status.plugin, status.reason) == ("held", "Gate", "gate g is closed")
    assert _bound(kube_api, "held") is None and not pod_events(kube_api, "held", "FailedScheduling")
    kube_api.create_object("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "g", "namespace": "default"},
                                          "data": {"open": "true"}})
    kube_api.wait_for(lambda: _bound(kube_api, "held"))
    assert scheduler.queue.gated() == []


def test_a_watched_kind_the_server_does_not_serve_is_refused_naming_the_plugin(kube_api, kube_api_kubeconfig) -> None:
    """Its informer would never sync and nothing would be scheduled: refused at start-up instead."""
    registry = bundled_plugins.registry().with_plugins(
        [Plugin("Groups", setup=Gate, watches=("scheduling.x-k8s.io/v1alpha1/podgroups",))], "test")
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "leaderElection": {"leaderElect": False},
              "profiles": [{"schedulerName": SCHEDULER, "plugins": {"multiPoint": {"enabled": [{"name": "Groups"}]}}}]}
    cfg = parse_config(config, "config", registry)
    client = Client(load_configuration(str(kube_api_kubeconfig)), qps=0, burst=100, pool_size=4)
    sched = Scheduler(client, build_profiles(cfg, registry), RuntimeSettings(serve=()))
    [problem] = sched.unserved_kinds()
    assert problem.startswith("the API server does not serve scheduling.x-k8s.io/v1alpha1/podgroups")
    assert "plugin Groups watches" in problem


def test_leadership_ending_lets_waiting_pods_go_unbound(kube_api, scheduler) -> None:
    """Pods held at Permit when leadership ends are never bound by this instance: their reservations are
    undone and they wait in the queue for whoever leads next; leading again, the pair completes here."""
    _node(kube_api, scheduler)
    kube_api.add_pod("first", scheduler_name=SCHEDULER, labels={"pair": "r"})
    kube_api.wait_for(lambda: len(scheduler.waiting) == 1)
    scheduler._stopped_leading()
    assert len(scheduler.waiting) == 0
    assert ("unreserve", "first") in CALLS
    uid = kube_api.get_object("pods", "first", "default")["metadata"]["uid"]
    assert not scheduler.cache.has_pod(uid)  # the assumption is forgotten
    kube_api.add_pod("second", scheduler_name=SCHEDULER, labels={"pair": "r"})
    time.sleep(0.5)  # not leading: nothing is decided or bound
    assert _bound(kube_api, "first") is None and _bound(kube_api, "second") is None
    scheduler._started_leading()
    kube_api.wait_for(lambda: _bound(kube_api, "first") and _bound(kube_api, "second"))


def test_a_pod_deleted_while_waiting_at_permit_is_let_go(kube_api, scheduler) -> None:
    """kube-scheduler's RejectWaitingPod on deletion: the reservation is undone at once, no event is written."""
    _node(kube_api, scheduler)
    kube_api.add_pod("gone", scheduler_name=SCHEDULER, labels={"pair": "s"})
    kube_api.wait_for(lambda: len(scheduler.waiting) == 1)
    kube_api.delete_object("pods", "gone", "default")
    kube_api.wait_for(lambda: ("unreserve", "gone") in CALLS)
    assert len(scheduler.waiting) == 0
    assert not pod_events(kube_api, "gone", "FailedScheduling")


def test_a_raising_filter_fails_that_pod_with_an_event_naming_it(kube_api, scheduler) -> None:
    _node(kube_api, scheduler)
    kube_api.add_pod("fragile", scheduler_name=SCHEDULER, labels={"fragile": "yes"})
    kube_api.add_pod("sturdy", scheduler_name=SCHEDULER)
    kube_api.wait_for(lambda: pod_events(kube_api, "fragile", "FailedScheduling"))
    kube_api.wait_for(lambda: _bound(kube_api, "sturdy"))
    message = pod_events(kube_api, "fragile", "FailedScheduling")[0]["message"]
    assert message == 'running PreFilter plugin "Fragile": raised ValueError: cannot read the pod'


def test_a_plugins_pod_patch_never_lands_on_a_same_name_successor(kube_api, kube_api_kubeconfig) -> None:
    """patch_pod carries the pod's UID: the API server refuses it for a re-created pod of the same name."""
    from scheduler.framework import ApiCallError
    from scheduler.runtime.handle import ClientApi

    old = kube_api.add_pod("same", scheduler_name=SCHEDULER)
    api = ClientApi(Client(load_configuration(str(kube_api_kubeconfig)), qps=0, pool_size=2))
    stale = PodInfo.from_api(old)
    kube_api.delete_object("pods", "same", "default")
    kube_api.add_pod("same", scheduler_name=SCHEDULER)
    with pytest.raises(ApiCallError) as err:
        api.patch_pod(stale, {"metadata": {"annotations": {"example.com/x": "y"}}})
    assert err.value.status == 422
    annotations = kube_api.get_object("pods", "same", "default")["metadata"].get("annotations") or {}
    assert "example.com/x" not in annotations
