"""Tests of the NamespaceQuota plugin: Reserve and Unreserve on their own with a fake handle, and through whole
scheduling cycles (scheduler.testing.Cycles). Run: pytest quota/"""

from __future__ import annotations

from quota import CONFIGMAPS, PLUGINS, PODS_KIND, NamespaceQuota, NamespaceQuotaArgs
from scheduler.framework import Code, CycleState, ObjectStore, Plugin, Status
from scheduler.testing import Cycles, FakeHandle, pod_info, pod_object

QUOTA = PLUGINS[0]
GPU = "example.com/gpu"
NODES = "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', memory: 8Gi, pods: '110', example.com/gpu: '8'}}"


def quota(namespace: str, **limits: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "scheduling-quota", "namespace": namespace},
            "data": {GPU if name == "gpu" else name: value for name, value in limits.items()}}


def gpu_pod(name: str, gpus: int, namespace: str = "team-a", **keywords) -> dict:
    return pod_object(name=name, namespace=namespace, requests={GPU: str(gpus)}, **keywords)


class Hold:
    """Permit holds pods labelled hold=yes for 10 s: a reservation not yet bound."""

    def __init__(self, args, handle):
        pass

    def permit(self, cycle, pod, node):
        return Status(Code.WAIT, timeout=10) if pod.labels.get("hold") == "yes" else None


HOLD = Plugin(name="Hold", setup=Hold)


def test_pods_over_their_namespaces_quota_are_refused_with_the_reason():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="4")]})
    for name in ("a", "b", "c"):
        sim.add_pod(gpu_pod(name, 2))
    sim.run_until_idle()
    assert sim.placements == {"team-a/a": "n1", "team-a/b": "n1"}
    refused = sim.events_for("team-a/c")[-1]
    assert refused.plugin == "NamespaceQuota"
    assert refused.message.startswith("0/1 nodes are available: namespace team-a over its example.com/gpu quota: "
                                      "requests 2, in use 4 of 4.")


def test_a_namespace_without_a_quota_is_not_limited():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="1")]})
    for name in ("a", "b", "c"):
        sim.add_pod(gpu_pod(name, 2, namespace="team-b"))
    sim.run_until_idle()
    assert len(sim.placements) == 3


def test_a_reservation_waiting_at_permit_counts_until_it_is_given_back():
    sim = Cycles(NODES, plugins=[QUOTA, HOLD], objects={CONFIGMAPS: [quota("team-a", gpu="2")]})
    sim.add_pod(gpu_pod("held", 2, labels={"hold": "yes"}))
    sim.add_pod(gpu_pod("next", 1, spec={"priority": -1}))  # tried after the held one
    sim.run_until_idle()
    assert list(sim.waiting) == ["team-a/held"]
    assert "in use 2 of 2" in sim.events_for("team-a/next")[-1].message
    assert set(sim.instance("NamespaceQuota").reserved) == {"uid-team-a-held"}
    sim.advance(10)  # the wait times out: Unreserve gives the 2 gpus back and the next pod is bound
    assert "uid-team-a-held" not in sim.instance("NamespaceQuota").reserved
    assert sim.placements == {"team-a/next": "n1"}


def test_a_failed_binding_gives_the_quota_back():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="2")]})
    sim.api.fail("POST", "/pods/first/binding", message="try later")
    sim.add_pod(gpu_pod("first", 2))
    sim.add_pod(gpu_pod("second", 2, spec={"priority": -1}))
    sim.run_until_idle()
    assert sim.placements == {"team-a/second": "n1"}
    assert "uid-team-a-first" not in sim.instance("NamespaceQuota").reserved


def test_a_deleted_pod_frees_its_quota_for_a_pending_one():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="2")]})
    sim.add_pod(gpu_pod("old", 2))
    sim.add_pod(gpu_pod("new", 2))
    sim.run_until_idle()
    assert sim.placements == {"team-a/old": "n1"}
    sim.delete_pod("team-a/old")
    sim.advance(1)
    assert sim.placements == {"team-a/new": "n1"}


def test_a_raised_quota_lets_a_pending_pod_in():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="1")]})
    sim.add_pod(gpu_pod("a", 2))
    sim.run_until_idle()
    assert sim.placements == {}
    sim.put_object(CONFIGMAPS, quota("team-a", gpu="2"))
    sim.advance(1)
    assert sim.placements == {"team-a/a": "n1"}


def test_a_quota_value_that_is_not_a_quantity_refuses_the_namespaces_pods():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", gpu="lots")]})
    sim.add_pod(gpu_pod("a", 1))
    sim.run_until_idle()
    message = sim.events_for("team-a/a")[-1].message
    assert message.startswith("0/1 nodes are available: ConfigMap team-a/scheduling-quota: example.com/gpu:")


def test_cpu_quota_is_counted_in_millicores():
    sim = Cycles(NODES, plugins=[QUOTA], objects={CONFIGMAPS: [quota("team-a", cpu="1500m")]})
    sim.add_pod(pod_object(name="a", namespace="team-a", requests={"cpu": "1"}))
    sim.add_pod(pod_object(name="b", namespace="team-a", requests={"cpu": "1"}))
    sim.run_until_idle()
    assert "requests 1, in use 1 of 1500m" in sim.events_for("team-a/b")[-1].message


def reserving(limit: str = "2") -> tuple[NamespaceQuota, FakeHandle]:
    stores = {CONFIGMAPS: ObjectStore(CONFIGMAPS, {"team-a/scheduling-quota": quota("team-a", gpu=limit)}),
              PODS_KIND: ObjectStore(PODS_KIND)}
    handle = FakeHandle(objects=stores)
    return NamespaceQuota(NamespaceQuotaArgs(), handle), handle


def test_reserve_counts_what_is_promised_and_refuses_past_the_limit():
    plugin, handle = reserving()
    first, second = pod_info(gpu_pod("first", 2)), pod_info(gpu_pod("second", 1))
    for pod in (first, second):
        handle.objects(PODS_KIND).put(pod_object(gpu_pod(pod.name, 1)))
    assert plugin.reserve(CycleState(), first, "n1") is None
    refusal = plugin.reserve(CycleState(), second, "n1")
    assert refusal is not None and refusal.code is Code.UNSCHEDULABLE
    assert refusal.reasons == ("namespace team-a over its example.com/gpu quota: requests 1, in use 2 of 2",)


def test_unreserve_gives_back_once_and_again_changes_nothing():
    plugin, handle = reserving()
    first, second = pod_info(gpu_pod("first", 2)), pod_info(gpu_pod("second", 2))
    for pod in (first, second):
        handle.objects(PODS_KIND).put(gpu_pod(pod.name, 2))
    assert plugin.reserve(CycleState(), first, "n1") is None
    plugin.unreserve(CycleState(), first, "n1")
    plugin.unreserve(CycleState(), first, "n1")
    assert plugin.reserved == {}
    assert plugin.reserve(CycleState(), second, "n1") is None


def test_a_reservation_seen_bound_is_counted_once():
    plugin, handle = reserving(limit="3")
    first, second = pod_info(gpu_pod("first", 2)), pod_info(gpu_pod("second", 1))
    handle.objects(PODS_KIND).put(gpu_pod("second", 1))
    handle.objects(PODS_KIND).put(gpu_pod("first", 2, node_name="n1"))  # the API shows it bound already
    assert plugin.reserve(CycleState(), first, "n1") is None
    assert plugin.reserve(CycleState(), second, "n1") is None  # 2 + 1 <= 3: first not counted twice
    assert set(plugin.reserved) == {second.uid}
