"""Tests of the Coscheduling plugin through whole scheduling cycles (scheduler.testing.Cycles): the real
framework, a fake API and a fake clock, no cluster. Run: pytest coscheduling/"""

from __future__ import annotations

from coscheduling import LABEL, PLUGINS, PODGROUPS
from scheduler.testing import Cycles, pod_object

COSCHEDULING = PLUGINS[0]


def nodes(*cpus: int) -> str:
    """One node per entry, with that many cpus (n1, n2, ...)."""
    return "\n---\n".join(f"kind: Node\nmetadata: {{name: n{i}}}\nstatus: {{allocatable: {{cpu: '{cpu}', "
                          f"memory: 8Gi, pods: '110'}}}}" for i, cpu in enumerate(cpus, 1))


def group(name: str, min_member: int, *, timeout: int = 10, created: str = "2026-11-28T10:00:00Z") -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout}}


def member(name: str, gang: str | None, *, created: str = "2026-11-28T11:00:00Z", **keywords) -> dict:
    pod = pod_object(name=name, requests={"cpu": "1"}, labels={LABEL: gang} if gang else None, **keywords)
    pod["metadata"]["creationTimestamp"] = created
    return pod


def gang(sim: Cycles, name: str, size: int) -> list[str]:
    keys = []
    for i in range(1, size + 1):
        sim.add_pod(member(f"{name}-{i}", name))
        keys.append(f"default/{name}-{i}")
    return keys


def test_members_wait_outside_the_queue_until_the_group_has_min_member_pods():
    sim = Cycles(nodes(4), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 3)]})
    sim.add_pod(member("train-1", "train"))
    sim.add_pod(member("train-2", "train"))
    sim.run_until_idle()
    assert sim.gated["default/train-1"].plugin == "Coscheduling"
    assert sim.gated["default/train-1"].reason == "PodGroup default/train has 2 of its minMember 3 pods"
    assert sim.events == []
    sim.add_pod(member("train-3", "train"))
    sim.run_until_idle()
    assert sim.gated == {}
    assert sim.placements == {f"default/train-{i}": "n1" for i in (1, 2, 3)}


def test_a_member_of_a_missing_group_is_held_with_the_reason():
    sim = Cycles(nodes(4), plugins=[COSCHEDULING])
    sim.add_pod(member("lost-1", "lost"))
    sim.run_until_idle()
    assert sim.gated["default/lost-1"].reason == "PodGroup default/lost not found"
    sim.put_object(PODGROUPS, group("lost", 1))
    sim.run_until_idle()
    assert sim.placements == {"default/lost-1": "n1"}


def test_placed_members_wait_at_permit_until_the_last_one_lets_them_all_bind():
    sim = Cycles(nodes(4), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 3)]})
    keys = gang(sim, "train", 3)
    sim.api.fail("POST", "/pods/train-3/binding", message="hold on")  # see the first two waiting
    sim.run_until_idle()
    assert sim.api.bindings == [("default/train-1", "n1"), ("default/train-2", "n1")]
    sim.advance(1)  # train-3's backoff: it completes the gang again
    assert set(sim.placements) == set(keys)


def test_a_gang_that_cannot_fit_binds_no_member_and_holds_nothing():
    sim = Cycles(nodes(2), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 3)]})
    keys = gang(sim, "train", 3)
    sim.run_until_idle()
    assert sim.placements == {} and sim.waiting == {} and sim.assumed == {}
    assert not sim.nodes["n1"].pods
    last = sim.events_for("default/train-3")[-1]
    assert last.plugin == "Coscheduling"
    assert last.message.endswith("PodGroup default/train rejected: this member cannot be placed")
    rejected = sim.events_for("default/train-1")[-1]
    assert rejected.message == "PodGroup default/train rejected: member train-3 cannot be placed"
    sim.add_node("kind: Node\nmetadata: {name: n2}\nstatus: {allocatable: {cpu: '2', memory: 8Gi, pods: '110'}}")
    sim.advance(10)
    assert set(sim.placements) == set(keys)


def test_members_left_waiting_are_rejected_at_the_groups_timeout_and_hold_nothing():
    sim = Cycles(nodes(4), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 3, timeout=10)]})
    sim.add_pod(member("train-1", "train"))
    sim.add_pod(member("train-2", "train"))
    sim.add_pod(member("train-3", "train", spec={"schedulerName": "another-scheduler"}))  # never ours to place
    sim.run_until_idle()
    assert sorted(sim.waiting) == ["default/train-1", "default/train-2"]
    sim.advance(9)
    assert sim.placements == {} and len(sim.waiting) == 2
    sim.advance(1)
    assert sim.waiting == {} and sim.assumed == {} and sim.placements == {} and not sim.nodes["n1"].pods
    messages = {e.message for e in sim.events if e.reason == "FailedScheduling"}
    assert "rejected due to timeout after waiting 10s at plugin Coscheduling" in messages


def two_gangs(**args) -> tuple[Cycles, list[str], list[str]]:
    """Room for 4 pods, two gangs of 3, the first one older."""
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                        "queueSort": {"disabled": [{"name": "PrioritySort"}]}},
                            "pluginConfig": [{"name": "Coscheduling", "args": args}]}]}
    sim = Cycles(nodes(4), plugins=[COSCHEDULING], config=config,
                 objects={PODGROUPS: [group("first", 3, created="2026-11-28T10:00:00Z"),
                                      group("second", 3, created="2026-11-28T10:05:00Z")]})
    return sim, gang(sim, "first", 3), gang(sim, "second", 3)


def test_two_gangs_competing_for_room_for_one_never_deadlock():
    sim, first, second = two_gangs()
    sim.run_until_idle()
    assert set(sim.placements) == set(first)
    waited = 0
    for _ in range(120):  # tried again and again, the second gang never binds a member half-way...
        sim.advance(1)
        waited += len(sim.waiting)
        assert set(sim.placements) == set(first)
        assert set(sim.assumed) <= set(second)
        # ...and a member it places holds the room no longer than the group's timeout
        assert all(sim.now - waiting.since <= 10 for waiting in sim.waiting.values())
    assert waited  # the second gang did place members on the way


def test_a_gang_backing_off_holds_no_room_at_all():
    sim, first, second = two_gangs(podGroupBackoffSeconds=30)
    sim.run_until_idle()
    assert set(sim.placements) == set(first) and sim.waiting == {} and sim.assumed == {}
    turned_away = sim.events_for(second[2])[-1]
    assert turned_away.message == ("PodGroup default/second is backing off for 30s: a member could not be placed")


def test_interleaved_gangs_release_each_other_so_one_completes():
    """With PrioritySort instead of the gang's queue order, members of two gangs take turns and hold room at
    once; the member that cannot fit releases its own gang and the other one completes."""
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                        "queueSort": {"disabled": [{"name": "Coscheduling"}]}}}]}
    sim = Cycles(nodes(4), plugins=[COSCHEDULING], config=config,
                 objects={PODGROUPS: [group("a", 3), group("b", 3)]})
    for i in (1, 2, 3):
        sim.add_pod(member(f"b-{i}", "b"))
        sim.add_pod(member(f"a-{i}", "a"))
    sim.run_until_idle()
    assert set(sim.placements) == {"default/a-1", "default/a-2", "default/a-3"}
    assert [e.message for e in sim.events_for("default/b-1")] == [
        "PodGroup default/b rejected: member b-3 cannot be placed"]
    assert sim.waiting == {} and sim.assumed == {}


def test_a_gangs_members_are_not_interleaved_with_other_pods():
    sim = Cycles(nodes(8), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 3)]})
    # created one after another, the solo pods between the members: PrioritySort would interleave them
    sim.add_pod(member("train-1", "train", created="2026-11-28T11:00:00Z"))
    sim.add_pod(member("solo-a", None, created="2026-11-28T11:00:01Z"))
    sim.add_pod(member("train-2", "train", created="2026-11-28T11:00:02Z"))
    sim.add_pod(member("solo-b", None, created="2026-11-28T11:00:03Z"))
    sim.add_pod(member("train-3", "train", created="2026-11-28T11:00:04Z"))
    sim.run_until_idle()
    assert [e.pod for e in sim.events] == ["default/train-1", "default/train-2", "default/train-3",
                                           "default/solo-a", "default/solo-b"]


def test_a_higher_priority_gang_goes_first():
    sim = Cycles(nodes(3), plugins=[COSCHEDULING],
                 objects={PODGROUPS: [group("old", 3, created="2026-11-28T09:00:00Z"), group("urgent", 3)]})
    gang(sim, "old", 3)
    for i in (1, 2, 3):
        sim.add_pod(member(f"urgent-{i}", "urgent", spec={"priority": 1000}))
    sim.run_until_idle()
    assert set(sim.placements) == {f"default/urgent-{i}" for i in (1, 2, 3)}


def test_a_member_beyond_min_member_that_cannot_fit_leaves_the_gang_bound():
    sim = Cycles(nodes(2), plugins=[COSCHEDULING], objects={PODGROUPS: [group("train", 2)]})
    keys = gang(sim, "train", 3)
    sim.run_until_idle()
    assert set(sim.placements) == set(keys[:2])
    assert sim.events_for(keys[2])[-1].plugin == ""  # the filters' verdict alone: the gang stands


def test_plain_pods_are_not_touched():
    sim = Cycles(nodes(2), plugins=[COSCHEDULING])
    sim.add_pod(member("web", None))
    sim.run_until_idle()
    assert sim.placements == {"default/web": "n1"}
