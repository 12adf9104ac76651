"""GangScheduling (kube-scheduler 1.36, Workload API) against kube-scheduler's recorded gang decisions, and its
rules one by one through ``scheduler.testing.Cycles``."""

from __future__ import annotations

import pytest

from scheduler.feature_gates import parse_feature_gates
from scheduler.framework import in_tree_registry
from scheduler.plugins import DEFAULT_PLUGINS, default_plugins
from scheduler.plugins.gang_scheduling import GANG_REJECTED, PODGROUPS, WAITING_FOR_MEMBERS
from scheduler.testing import Cycles
from scheduler.testing.builders import cluster_from_yaml, pod_object
from tests.gang_corpus import gang_files, gang_folder, outcome, read, recorded, replay

GATES_ON = parse_feature_gates("GenericWorkload=true,GangScheduling=true")


@pytest.mark.parametrize("path", gang_files(), ids=lambda p: p.stem)
def test_gangs_as_kube_scheduler_placed_them(path):
    gang_folder()
    doc = read(path)
    differences = []
    for probe in doc["probes"]:
        ours, theirs = outcome(replay(doc, probe), probe), recorded(probe)
        if ours != theirs:
            differences.append(f"gang {probe['index']} ({probe['feature']}):\n  ours {ours}\n  kube {theirs}")
    assert not differences, "\n".join(differences)


def test_the_corpus_is_all_there():
    folder = gang_folder()
    probes = [p for path in sorted(folder.glob("*.json")) for p in read(path)["probes"]]
    assert len(probes) == 36  # the README's count: 11 all bound, 9 some, 16 none
    classes = [recorded(p)["bound"] for p in probes]
    assert (classes.count("all"), classes.count("some>=minCount"), classes.count("none")) == (11, 9, 16)


def test_default_profile_gains_gang_scheduling_last_only_with_both_gates():
    assert default_plugins(None) == DEFAULT_PLUGINS
    assert default_plugins(parse_feature_gates("GenericWorkload=true").enabled) == DEFAULT_PLUGINS
    assert default_plugins(lambda gate: gate == "GangScheduling") == DEFAULT_PLUGINS  # the flag refuses this one
    assert default_plugins(GATES_ON.enabled)[-1] == ("GangScheduling", 0)
    assert default_plugins(GATES_ON.enabled)[:-1] == DEFAULT_PLUGINS


CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""


def _group(name, policy):
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}"},
            "spec": {"schedulingPolicy": policy}}


def _member(name, group, cpu="1"):
    return pod_object(name=name, requests={"cpu": cpu}, spec={"schedulingGroup": {"podGroupName": group}})


def _sim(groups, gates=GATES_ON):
    registry = in_tree_registry().with_defaults(default_plugins(gates.enabled))
    return Cycles(cluster_from_yaml(CLUSTER), registry=registry, objects={PODGROUPS: groups})


def test_members_wait_outside_the_queue_until_minCount_pods_exist():
    sim = _sim([_group("g", {"gang": {"minCount": 3}})])
    sim.add_pod(_member("a", "g"))
    sim.add_pod(_member("b", "g"))
    sim.run_until_idle()
    assert sim.gated["default/a"].reason == WAITING_FOR_MEMBERS
    assert sim.placements == {}
    sim.add_pod(_member("c", "g"))
    sim.run_until_idle()
    assert sorted(sim.placements) == ["default/a", "default/b", "default/c"]


def test_a_pod_naming_a_missing_pod_group_waits_for_it():
    sim = _sim([])
    sim.add_pod(_member("a", "nope"))
    sim.run_until_idle()
    assert sim.gated["default/a"].reason == 'waiting for pods\'s pod group "nope" to appear in scheduling queue'
    sim.put_object(PODGROUPS, _group("nope", {"basic": {}}))
    sim.run_until_idle()
    assert "default/a" in sim.placements


def test_a_gang_too_big_for_the_cluster_binds_none_and_frees_what_it_held():
    sim = _sim([_group("g", {"gang": {"minCount": 5}})])
    for i in range(5):
        sim.add_pod(_member(f"p{i}", "g"))
    sim.run_until_idle()
    assert sim.placements == {} and sim.assumed == {} and sim.waiting == {}
    last = {key: sim.events_for(key)[-1].message for key in (f"default/p{i}" for i in range(5))}
    assert sorted(last.values()).count(GANG_REJECTED) == 4  # 2 nodes x 2 cpu: four fitted and waited


def test_basic_policy_is_plain_scheduling():
    sim = _sim([_group("g", {"basic": {}})])
    for i in range(5):
        sim.add_pod(_member(f"p{i}", "g"))
    sim.run_until_idle()
    assert len(sim.placements) == 4


@pytest.mark.parametrize(("field", "value"), [
    ("schedulingConstraints", {"topology": [{"key": "topology.kubernetes.io/zone"}]}),
    ("resourceClaims", [{"name": "shared", "resourceClaimName": "gpus"}]),
])
def test_a_gang_asking_for_an_unsupported_alpha_feature_is_refused_naming_the_field(field, value):
    group = _group("g", {"gang": {"minCount": 2}})
    group["spec"][field] = value
    sim = _sim([group])
    for i in range(2):
        sim.add_pod(_member(f"p{i}", "g"))
    sim.run_until_idle()
    assert sim.placements == {}
    reason = sim.gated["default/p0"].reason
    assert f"PodGroup default/g: spec.{field}:" in reason and "not supported by this scheduler" in reason


def test_with_the_gates_off_the_group_is_ignored():
    sim = _sim([_group("g", {"gang": {"minCount": 5}})], gates=parse_feature_gates(None))
    for i in range(5):
        sim.add_pod(_member(f"p{i}", "g"))
    sim.run_until_idle()
    assert len(sim.placements) == 4  # placed one by one: the constraint is not known


def test_a_member_waiting_at_permit_calls_its_pending_siblings():
    from scheduler.framework import Code, CycleState, ObjectStore
    from scheduler.model import PodInfo
    from scheduler.plugins.gang_scheduling import PODS, GangScheduling
    from scheduler.testing.cycles import FakeHandle

    asked: list[list[str]] = []
    stores = {PODGROUPS: ObjectStore(PODGROUPS), PODS: ObjectStore(PODS)}
    stores[PODGROUPS].put(_group("g", {"gang": {"minCount": 3}}))
    members = [_member(f"p{i}", "g") for i in range(3)]
    for obj in members:
        stores[PODS].put(obj)
    plugin = GangScheduling(None, FakeHandle(objects=stores, activate=asked.append))
    first = PodInfo.from_api(members[0])
    assert plugin.reserve(CycleState(), first, "n1") is None
    status = plugin.permit(CycleState(), first, "n1")
    assert status.code is Code.WAIT and status.timeout == 300
    assert asked == [["default/p1", "default/p2"]]
