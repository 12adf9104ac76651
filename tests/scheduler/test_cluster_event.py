"""Requeue triggers: the cluster events a node or pod change amounts to, what each filter plugin declares,
and the profile's answer for the plugins that rejected a pod."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import Profile
from scheduler.framework.cluster_event import (
    ClusterEvent,
    NodeProperties,
    assigned_pod_change,
    node_change,
    pod_change,
)
from scheduler.model import PodInfo, PodSpecError
from scheduler.plugins import in_tree_registry
from tests.scheduler.builders import node, node_obj, pod, pod_obj

REGISTRY = in_tree_registry()

E = ClusterEvent


def _node_event(**changes) -> ClusterEvent:
    info = node("n")
    before = NodeProperties.of(info)
    info.update_node(node_obj("n", **changes))
    return node_change(before, NodeProperties.of(info))


def test_node_added_and_heartbeat():
    assert node_change(None, NodeProperties.of(node("n"))) == E.NODE_ADDED
    assert _node_event() == E.NONE  # the same node again, as a kubelet status heartbeat sends it


@pytest.mark.parametrize(
    ("changes", "event"),
    [
        ({"labels": {"disk": "ssd"}}, E.NODE_LABELS_CHANGED),
        ({"taints": [{"key": "k", "effect": "NoSchedule"}]}, E.NODE_TAINTS_CHANGED),
        ({"unschedulable": True}, E.NODE_TAINTS_CHANGED),
        ({"conditions": [{"type": "Ready", "status": "False"}]}, E.NODE_TAINTS_CHANGED),
        ({"cpu": "8"}, E.NODE_ALLOCATABLE_CHANGED),
        ({"cpu": "8", "labels": {"a": "b"}}, E.NODE_ALLOCATABLE_CHANGED | E.NODE_LABELS_CHANGED),
    ],
)
def test_node_update_events(changes, event):
    assert _node_event(**changes) == event


@pytest.mark.parametrize(
    ("changes", "event"),
    [
        ({}, E.NONE),
        ({"annotations": {"my-network-preference": "high-speed"}}, E.POD_ANNOTATIONS_CHANGED),
        ({"requests": {"cpu": "1"}}, E.POD_REQUESTS_CHANGED),
        ({"tolerations": [{"key": "k", "operator": "Exists"}]}, E.POD_TOLERATIONS_CHANGED),
        ({"node_selector": {"disk": "ssd"}}, E.POD_NODE_AFFINITY_CHANGED),
        ({"host_ports": [80]}, E.POD_HOST_PORTS_CHANGED),
        ({"spread": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
         E.POD_TOPOLOGY_SPREAD_CHANGED),
    ],
)
def test_pod_update_events(changes, event):
    assert pod_change(pod("p"), pod("p", **changes)) == event


def test_pod_label_and_status_changes():
    obj = pod_obj("p")
    relabelled = pod_obj("p")
    relabelled["metadata"]["labels"] = {"tier": "web"}
    assert pod_change(PodInfo.from_api(obj), PodInfo.from_api(relabelled)) == E.POD_LABELS_CHANGED
    obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    assert pod_change(pod("p"), PodInfo.from_api(obj)) == E.NONE


def test_assigned_pod_events():
    """What pod affinity and topology spread wait for: a pod newly counted on a node, or one counted that is
    relabelled; a status update is no event."""
    bound = pod("b", node_name="n1")
    assert assigned_pod_change(None, bound) == E.ASSIGNED_POD_ADDED
    assert assigned_pod_change(bound, pod("b", node_name="n1")) == E.NONE
    assert assigned_pod_change(bound, pod("b", node_name="n1", labels={"app": "db"})) == \
        E.ASSIGNED_POD_LABELS_CHANGED


def test_unreadable_pod_changes_only_with_its_problem():
    obj = pod_obj("p", requests={"cpu": "lots"})
    first = PodInfo.unreadable(obj, PodSpecError("spec.containers[0].resources.requests.cpu", "bad"))
    obj["metadata"]["labels"] = {"fixed": "no"}
    same = PodInfo.unreadable(obj, PodSpecError("spec.containers[0].resources.requests.cpu", "bad"))
    assert (same.key, same.uid, same.scheduler_name) == ("default/p", "uid-p", "my-custom-scheduler")
    assert pod_change(first, same) == E.NONE  # a new label, the same problem: not worth reporting again
    other = PodInfo.unreadable(obj, PodSpecError("spec.overhead.cpu", "bad"))
    assert pod_change(first, other) == E.POD_SPEC_ERROR_CHANGED
    assert pod_change(first, pod("p")) & E.POD_SPEC_ERROR_CHANGED  # fixed


def test_every_filter_plugin_declares_its_triggers():
    for plugin in REGISTRY.values():
        if plugin.filters:
            assert E.NONE != plugin.requeue_on != E.ANY, plugin.name
            assert plugin.requeue_on & E.NODE_ADDED, plugin.name  # a new node may always fit


def _rejected_by(profile: Profile, p: PodInfo, *nodes) -> frozenset[str]:
    result = profile.schedule(p, list(nodes), random.Random(1))
    assert result.node_name is None
    return result.rejected_by


def test_profile_answers_with_what_the_rejecting_plugins_declare():
    profile = Profile.default("s")
    tainted = node("t", taints=[{"key": "k", "effect": "NoSchedule"}])
    small = node("small", cpu="1")
    rejected = _rejected_by(profile, pod("p", requests={"cpu": "2"}), tainted, small)
    assert rejected == {"TaintToleration", "NodeResourcesFit"}
    triggers = profile.requeue_triggers(rejected)
    assert triggers == (E.NODE_ADDED | E.NODE_TAINTS_CHANGED | E.POD_TOLERATIONS_CHANGED
                        | E.NODE_ALLOCATABLE_CHANGED | E.ASSIGNED_POD_DELETED | E.POD_REQUESTS_CHANGED)
    only_taints = profile.requeue_triggers(_rejected_by(profile, pod("p"), tainted))
    assert not only_taints & (E.NODE_LABELS_CHANGED | E.NODE_ALLOCATABLE_CHANGED | E.ASSIGNED_POD_DELETED)


def test_pod_no_plugin_rejected_waits_for_any_event():
    profile = Profile.default("s")
    assert profile.schedule(pod("p"), [], random.Random(1)).rejected_by == frozenset()
    assert profile.requeue_triggers(frozenset()) == E.ANY


def test_spread_rejection_waits_for_pods_placed_or_gone_and_node_changes():
    """PodTopologySpread's rejection is undone by a matching pod placed in the emptier zone or gone from
    the fuller one, a node added or relabelled (a new domain), a taint change (nodeTaintsPolicy: Honor), or
    the pod's own labels or constraints; not by more allocatable or a new toleration."""
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    full = node("a", labels={"zone": "a"}, pods_on_it=[pod(f"w{i}", labels={"app": "web"}) for i in range(2)])
    empty = node("b", labels={"zone": "b"}, cpu="0")
    incoming = pod("p", labels={"app": "web"}, spread=spread, requests={"cpu": "100m"})
    rejected = _rejected_by(Profile.default("s"), incoming, full, empty)
    assert rejected == {"PodTopologySpread", "NodeResourcesFit"}
    triggers = REGISTRY["PodTopologySpread"].requeue_on
    assert triggers == (E.ASSIGNED_POD_ADDED | E.ASSIGNED_POD_LABELS_CHANGED | E.ASSIGNED_POD_DELETED
                        | E.NODE_ADDED | E.NODE_LABELS_CHANGED | E.NODE_TAINTS_CHANGED | E.POD_LABELS_CHANGED
                        | E.POD_TOPOLOGY_SPREAD_CHANGED)
