"""The decision procedure: kube-scheduler's FailedScheduling message, weights, sampling (ties:
test_tie_breaking.py)."""

from __future__ import annotations

import random

import pytest

from scheduler.config import parse_config
from scheduler.framework import (
    NO_NODES_MESSAGE,
    ClusterView,
    Code,
    Profile,
    Status,
    build_profiles,
    fit_error_message,
    num_feasible_nodes_to_find,
)
from scheduler.model import NodeTraits, PodSpecError
from tests import bundled_plugins
from tests.scheduler.builders import node, pod

REGISTRY = bundled_plugins.registry()
NetworkAwareArgs = REGISTRY["NetworkAware"].args
LeastLoadedArgs = REGISTRY["LeastLoaded"].args

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def profile(**plugins) -> Profile:
    cfg = parse_config({**HEAD, "profiles": [{"schedulerName": "s", **plugins}]}, "config", REGISTRY)
    return build_profiles(cfg)["s"]


def test_failed_scheduling_message_has_kube_scheduler_form():
    nodes = [node("cp", taints=[CONTROL_PLANE]), node("w1", cpu="1"), node("w2", cpu="1")]
    result = Profile.default().schedule(pod(requests={"cpu": "2"}), nodes, random.Random(0))
    assert result.node_name is None and not result.scheduled
    assert result.message == ("0/3 nodes are available: 1 node(s) had untolerated taint(s), "
                              "2 Insufficient cpu.")
    w1 = result.failures["w1"]  # 1 cpu for a pod asking 2: too small even empty
    assert (w1.code, w1.reasons, w1.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",),
                                                 "NodeResourcesFit")
    assert result.explain() == result.message


def test_message_counts_every_reason_and_sorts_as_strings():
    # kube-scheduler sorts "<count> <reason>" as strings: "10 ..." comes before "2 ..."
    failures = {f"a{i}": Status(Code.UNSCHEDULABLE, ("Insufficient memory",)) for i in range(10)}
    failures |= {f"b{i}": Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory")) for i in range(2)}
    failures["c"] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
    assert fit_error_message(13, failures) == (
        "0/13 nodes are available: 1 node(s) were unschedulable, 12 Insufficient memory, 2 Insufficient cpu.")


def test_every_node_rejected_for_one_reason():
    nodes = [node(f"n{i}", unschedulable=True) for i in range(3)]
    result = Profile.default().schedule(pod(), nodes, random.Random(0))
    assert result.message == "0/3 nodes are available: 3 node(s) were unschedulable."


def test_no_nodes_at_all():
    result = Profile.default().schedule(pod(), [], random.Random(0))
    assert result.node_name is None and result.message == NO_NODES_MESSAGE == "no nodes available to schedule pods"


def test_all_nodes_visited_when_none_fits_even_with_sampling():
    nodes = [node(f"n{i}", cpu="1") for i in range(1000)]
    result = Profile.default().schedule(pod(requests={"cpu": "2"}), nodes, random.Random(0))
    assert result.evaluated_nodes == 1000
    assert result.message == "0/1000 nodes are available: 1000 Insufficient cpu."


def test_pod_spec_error_propagates():
    p = pod(annotations={"my-network-preference": "high speed"})
    with pytest.raises(PodSpecError, match=r"metadata.annotations\[my-network-preference\]"):
        profile(plugins={"multiPoint": {"enabled": ["NetworkAware"]}}).schedule(p, [node()], random.Random(0))


def test_network_aware_config_places_annotated_pods_on_high_speed_nodes_only():
    prof = profile(plugins={"multiPoint": {"enabled": ["NetworkAware"]}})
    nodes = [node("cp", taints=[CONTROL_PLANE]), node("w1", labels={"network-topology": "high-speed"}), node("w2")]
    rng = random.Random(3)
    wants = pod(annotations={"my-network-preference": "high-speed"})
    assert {prof.schedule(wants, nodes, rng).node_name for _ in range(20)} == {"w1"}
    plain = prof.schedule(pod(), nodes, rng)
    assert plain.feasible_nodes == ["w1", "w2"] and plain.totals[0] == plain.totals[1]
    assert plain.node_name == "w1"  # tied: the first feasible node (tests/scheduler/test_tie_breaking.py)
    lonely = [nodes[0], nodes[2]]
    assert prof.schedule(wants, lonely, rng).message == (
        "0/2 nodes are available: 1 node(s) didn't have label network-topology=high-speed requested by pod "
        "annotation my-network-preference, 1 node(s) had untolerated taint(s).")


def test_weighted_scores_decide():
    # NetworkAware (score only) prefers the high-speed node; LeastLoaded prefers the empty one.
    net, least = REGISTRY["NetworkAware"], REGISTRY["LeastLoaded"]
    fast_busy = node("fast", labels={"network-topology": "high-speed"},
                     pods_on_it=[pod(f"x{i}") for i in range(4)])
    slow_idle = node("slow")
    wants = pod(annotations={"my-network-preference": "high-speed"})
    rng = random.Random(0)
    for w_net, w_least, winner in [(1, 2, "slow"), (2, 1, "fast"), (5, 4, "fast")]:
        prof = Profile("s", [], [(net, NetworkAwareArgs(), w_net), (least, LeastLoadedArgs(), w_least)])
        result = prof.schedule(wants, [fast_busy, slow_idle], rng)
        assert result.node_name == winner
        assert result.node_scores("fast") == {"NetworkAware": 100 * w_net, "LeastLoaded": 0}
        assert result.node_scores("slow") == {"NetworkAware": 0, "LeastLoaded": 100 * w_least}
        assert sorted(result.totals) == sorted([100 * w_net, 100 * w_least])
        assert result.top(1)[0] == (winner, max(100 * w_net, 100 * w_least))
        assert winner in result.explain()


def test_single_feasible_node_is_chosen_without_scoring():
    result = Profile.default().schedule(pod(), [node("a", unschedulable=True), node("b")], random.Random(0))
    assert result.node_name == "b" and result.totals == [] and result.scores == {}
    assert "only feasible node" in result.explain()


def test_best_total_wins_over_ties():
    nodes = [node("big", cpu="16", memory="32Gi"), node("small1"), node("small2")]
    rng = random.Random(1)
    assert {Profile.default().schedule(pod(requests={"cpu": "1"}), nodes, rng).node_name
            for _ in range(30)} == {"big"}


def test_least_loaded_spreads_within_one_pod():
    prof = profile(plugins={"score": {"disabled": ["*"], "enabled": ["LeastLoaded"]}})
    nodes = [node(f"n{i}") for i in range(7)]
    nodes[3].add_pod(pod("already-there"))
    rng = random.Random(5)
    for i in range(60):
        p = pod(f"p{i}")
        chosen = prof.schedule(p, nodes, rng).node_name
        next(n for n in nodes if n.name == chosen).add_pod(p)  # what the cache's assume does
        counts = [n.pod_count for n in nodes]
        assert max(counts) - min(counts) <= 1, counts


def test_most_allocated_packs():
    prof = profile(plugins={"score": {"disabled": ["*"], "enabled": ["LeastLoaded"]}},
                   pluginConfig=[{"name": "LeastLoaded", "args": {"strategy": "MostAllocated"}}])
    nodes = [node(f"n{i}", pods="5") for i in range(3)]
    rng = random.Random(5)
    for i in range(10):
        p = pod(f"p{i}")
        chosen = prof.schedule(p, nodes, rng).node_name
        next(n for n in nodes if n.name == chosen).add_pod(p)
    assert sorted(n.pod_count for n in nodes) == [0, 5, 5]  # "Too many pods" stops a full node


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (None, 5, 5),
        (None, 99, 99),
        (None, 100, 100),
        (None, 200, 100),  # 49% of 200 = 98 -> at least 100
        (None, 1000, 420),  # 50 - 1000/125 = 42%
        (None, 5000, 500),  # 10%
        (None, 10000, 500),  # 50 - 80 < 5 -> 5%
        (0, 1000, 420),
        (30, 1000, 300),
        (10, 500, 100),
        (100, 5000, 5000),
        (50, 50, 50),
    ],
)
def test_num_feasible_nodes_to_find(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_sampling_stops_early_and_rotates():
    nodes = [node(f"n{i:04d}") for i in range(1000)]
    prof = Profile.default()
    rng = random.Random(0)
    first = prof.schedule(pod("a"), nodes, rng)
    assert first.evaluated_nodes == 420 and len(first.feasible_nodes) == 420
    assert first.feasible_nodes[0] == "n0000" and first.feasible_nodes[-1] == "n0419"
    second = prof.schedule(pod("b"), nodes, rng)
    assert second.feasible_nodes[0] == "n0420"  # the next decision looks at the next nodes
    third = prof.schedule(pod("c"), nodes, rng)
    assert third.feasible_nodes[0] == "n0840" and third.feasible_nodes[-1] == "n0259"  # wraps around


def test_sampling_configurable_and_skips_failing_nodes():
    nodes = [node(f"n{i:03d}", unschedulable=(i % 2 == 1)) for i in range(400)]
    prof = profile(percentageOfNodesToScore=50)
    result = prof.schedule(pod(), nodes, random.Random(0))
    assert len(result.feasible_nodes) == 200  # 50% of 400, all schedulable ones
    assert result.evaluated_nodes >= 399 and len(result.failures) >= 199
    assert all(int(name[1:]) % 2 == 0 for name in result.feasible_nodes)
    every = profile(percentageOfNodesToScore=100).schedule(pod(), nodes, random.Random(0))
    assert len(every.feasible_nodes) == 200 and every.evaluated_nodes == 400


def test_scores_stay_within_weight_bounds():
    nodes = [node(f"n{i}", cpu=str(1 + i), taints=[{"key": "soft", "effect": "PreferNoSchedule"}] * (i % 2))
             for i in range(6)]
    prof = Profile.default()
    result = prof.schedule(pod(requests={"cpu": "500m"}), nodes, random.Random(0))
    weights = {p.name: w for p, _, w in prof.scores}
    for plugin, scores in result.scores.items():
        assert all(0 <= s <= 100 * weights[plugin] for s in scores), (plugin, scores)
    assert result.node_name == result.top(1)[0][0]


def test_a_what_if_node_counts_in_the_views_traits() -> None:
    """ClusterView.what_if counts the stand-in node's traits: a cordoned what-if copy in a view of
    uncordoned nodes is still refused (NodeUnschedulable skips its pass when the traits count none)."""
    nodes = [node("a"), node("b")]
    cluster = ClusterView(nodes, traits=NodeTraits.of(nodes))
    cordoned = node("a", unschedulable=True)
    with cluster.what_if(cordoned) as view:
        assert view.traits == NodeTraits(cordoned=1)
    verdict = Profile.default().node_verdict(pod(), cordoned, cluster)
    assert verdict is not None and verdict.reasons == ("node(s) were unschedulable",)


# -- NodeAffinity's matchFields: kube-scheduler's PreFilterResult -------------------------------------------


def _named(*terms: list[dict]) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}
                                               for names in term]} for term in terms]}}}


def test_match_fields_narrow_the_nodes_filtered_as_kube_scheduler():
    """Required terms naming their nodes (metadata.name In): the other nodes are never filtered and fail
    "node(s) didn't satisfy plugin(s) [NodeAffinity]" (the corpus's repro-matchfields-message state), even a
    cordoned one, which would otherwise say it is unschedulable."""
    affinity = _named([["a"]])
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"] = [{"key": "disk", "operator": "In", "values": ["ssd"]}]
    nodes = [node("a"), node("b"), node("c", unschedulable=True)]
    result = Profile.default().schedule(pod(affinity=affinity), nodes, random.Random(0))
    assert result.message == ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                              "2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    assert result.failures["c"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.evaluated_nodes == 1
    # terms are ORed: the union of their nodes is filtered
    ok = Profile.default().schedule(pod(affinity=_named([["a"]], [["b"]])), nodes, random.Random(0))
    assert ok.feasible_nodes == ["a", "b"] and ok.failures["c"].reasons == (
        "node(s) didn't satisfy plugin(s) [NodeAffinity]",)


def test_match_fields_that_conflict_reject_the_pod_at_pre_filter():
    """Two metadata.name In lists in one term with no name in common: the pod is rejected up front
    (the corpus's repro-matchfields-conflict state)."""
    result = Profile.default().schedule(pod(affinity=_named([["a"], ["b"]])), [node("a"), node("b")],
                                        random.Random(0))
    assert result.message == "0/2 nodes are available: pod affinity terms conflict."
    assert result.pre_filter_rejection is not None and result.evaluated_nodes == 0


def test_a_term_naming_no_node_leaves_every_node_to_filter():
    affinity = _named([["a"]])
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    terms.append({"matchExpressions": [{"key": "zone", "operator": "Exists"}]})
    nodes = [node("a"), node("b", labels={"zone": "z1"}), node("c")]
    result = Profile.default().schedule(pod(affinity=affinity), nodes, random.Random(0))
    assert result.feasible_nodes == ["a", "b"]
    assert result.failures["c"].reasons == ("node(s) didn't match Pod's node affinity/selector",)
