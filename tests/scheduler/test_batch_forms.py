"""The plugins' batch forms (filter_batch, score_batch: the speed path the framework uses) give exactly the
verdicts and raw scores of their per-node functions, over randomly built nodes that cover the edge cases:
taints of every effect, cordoned nodes, zero and missing capacities, over-committed nodes, full pod slots,
extended resources; and pods with and without requests, tolerations and extended resources."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import ClusterView, Profile, per_node_memo
from scheduler.model import NodeInfo, PodInfo
from tests import bundled_plugins
from tests.scheduler.builders import node, node_obj, pod

# The bundled examples too: LeastLoaded has a batch score.
REGISTRY = bundled_plugins.registry()

ZONE = "topology.kubernetes.io/zone"
POD_AFFINITIES = [None, None, *(
    {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}
    for kind in ("podAntiAffinity", "podAffinity") for app in ("a", "b")
    for key in ("kubernetes.io/hostname", ZONE))]
BATCHED = sorted(name for name, p in REGISTRY.items() if p.filter_batch or p.score_batch)
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def _random_node(rng: random.Random, i: int) -> NodeInfo:
    taints = [{"key": rng.choice(["a", "b", "dedicated"]), "value": rng.choice(["", "x"]),
               "effect": rng.choice(EFFECTS)} for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    info = node(f"n{i}", cpu=rng.choice(["0", "1", "4", "64"]), memory=rng.choice(["0", "1Gi", "8Gi", "256Gi"]),
                pods=rng.choice(["0", "2", "110"]), taints=taints, unschedulable=rng.random() < 0.2,
                extra=rng.choice([{}, {"example.com/gpu": "2"}]),
                labels=rng.choice([{}, {ZONE: "z1"}, {ZONE: "z2"}]))
    for j in range(rng.choice([0, 1, 3])):
        info.add_pod(_random_pod(rng, f"on-{i}-{j}"))
    return info


def _random_pod(rng: random.Random, name: str) -> PodInfo:
    requests = rng.choice([None, {}, {"cpu": "500m"}, {"memory": "2Gi"}, {"cpu": "2", "memory": "4Gi"},
                           {"cpu": "100m", "ephemeral-storage": "1Gi"}, {"example.com/gpu": "1"}])
    tolerations = rng.choice([None, [{"operator": "Exists"}], [{"key": "a", "operator": "Exists"}],
                              [{"key": "b", "value": "x", "effect": "PreferNoSchedule"}],
                              [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]])
    return pod(name, requests=requests, tolerations=tolerations, affinity=rng.choice(POD_AFFINITIES),
               labels=rng.choice([{}, {"app": "a"}, {"app": "b"}]))


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("name", BATCHED)
def test_batch_forms_match_per_node_functions(name: str, seed: int) -> None:
    rng = random.Random(seed)
    plugin = REGISTRY[name]
    every = [_random_node(rng, i) for i in range(40)]
    # The whole list, and each node alone: a batch may take a slow path for the whole list because of one
    # odd node (e.g. a zero capacity), which must not hide a wrong fast path for the others.
    for nodes in [every, *([n] for n in every)]:
        for k in range(4):
            _check_batches(plugin, _random_pod(rng, f"p{k}"), nodes)


def _check_batches(plugin, p: PodInfo, nodes: list[NodeInfo]) -> None:
    cluster = ClusterView(nodes)
    for args in _args_variants(plugin):
        if plugin.filter_batch is not None:
            state = plugin.prepare_filter(p, args, cluster)
            if state is not None:
                expected = [plugin.filter_node(state, n) for n in nodes]
                got = plugin.filter_batch(state, nodes)
                if got is None:
                    assert expected == [None] * len(nodes)
                else:  # the same reasons and codes (Status compares by identity)
                    assert [(v.code, v.reasons) if v else None for v in got] == \
                        [(v.code, v.reasons) if v else None for v in expected]
        if plugin.score_batch is not None:
            state = plugin.prepare_score(p, args, cluster)
            if state is not None:
                assert plugin.score_batch(state, nodes) == [plugin.score_node(state, n) for n in nodes]


def _args_variants(plugin) -> list:
    if plugin.name == "LeastLoaded":
        return [plugin.args(mode=m, strategy=s) for m in ("podCount", "requestedResources")
                for s in ("LeastAllocated", "MostAllocated")]
    if plugin.name == "NodeResourcesFit":
        return [plugin.args(), plugin.args(ignoredResources=["example.com/gpu"]),
                plugin.args(scoringStrategy={"type": "MostAllocated"}),
                plugin.args(scoringStrategy={"resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]})]
    return [plugin.default_args()]


def test_wrapped_window_visits_every_node_once_per_round() -> None:
    """The filter's rotating start wraps around the node list without copying all of it: over rounds of
    decisions with sampling, every node is evaluated equally often."""
    nodes = [node(f"n{i}", cpu="64", memory="256Gi") for i in range(250)]
    profile = Profile.default()
    profile.percentage_of_nodes_to_score = 40  # 100 feasible wanted of 250: windows wrap around the end
    seen: dict[str, int] = {}
    rng = random.Random(3)
    for _ in range(5):  # 5 x 100 = 2 rounds of 250
        result = profile.schedule(pod("p", requests={"cpu": "1"}), nodes, rng)
        for name in result.feasible_nodes:
            seen[name] = seen.get(name, 0) + 1
    assert set(seen.values()) == {2} and len(seen) == 250


def test_memoised_batch_values_follow_every_change_of_a_node() -> None:
    """Batch forms keep per-node values on the NodeInfo (per_node_memo) for the next pod of the same kind:
    after a pod is added or removed, or the node object changes, the same pod must see the new values."""
    pods_on = [pod(f"on-{i}", requests={"cpu": "1", "memory": "1Gi"}) for i in range(3)]
    nodes = [node(f"n{i}", cpu="4", memory="8Gi", pods="3") for i in range(3)]
    wanting = pod("wanting", requests={"cpu": "2", "memory": "2Gi"})

    def check() -> None:
        for name in ("NodeResourcesFit", "NodeResourcesBalancedAllocation"):
            _check_batches(REGISTRY[name], wanting, nodes)

    check()  # fills the memos
    nodes[0].add_pod(pods_on[0])
    nodes[0].add_pod(pods_on[1])
    nodes[1].add_pod(pods_on[2])
    check()
    nodes[0].remove_pod(pods_on[1])
    check()
    nodes[2].update_node(node_obj("n2", cpu="1", memory="8Gi", pods="3"))
    check()


def test_per_node_memo_computes_only_the_nodes_without_a_value() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    asked: list[list[str]] = []

    def names(batch: list[NodeInfo]) -> list[str]:
        asked.append([n.name for n in batch])
        return [n.name.upper() for n in batch]

    assert per_node_memo("k", nodes, names) == ["N0", "N1", "N2", "N3"]
    nodes[2].add_pod(pod("p"))
    assert per_node_memo("k", nodes, names) == ["N0", "N1", "N2", "N3"]
    assert per_node_memo("other", nodes[:1], names) == ["N0"]
    assert asked == [["n0", "n1", "n2", "n3"], ["n2"], ["n0"]]


def test_per_node_memo_keeps_one_key_object_per_kind() -> None:
    """Every node's memo holds the same str for a kind of pod, however the caller built it, so a lookup
    matches it by identity (no byte comparison with another copy per node)."""
    nodes = [node("n0"), node("n1")]
    cpu = 100
    for one in nodes:  # a key built anew for each call, as a plugin builds it
        per_node_memo(f"kind {cpu}", [one], lambda batch: [0] * len(batch))
    first, second = (next(iter(n.memo)) for n in nodes)
    assert first is second


@pytest.mark.parametrize("seed", range(5))
def test_node_affinity_batch_matches_per_node_for_node_selectors(seed: int) -> None:
    rng = random.Random(seed)
    every = [_random_node(rng, i) for i in range(40)]
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}]}}}
    for selector, affinity in [({ZONE: "z1"}, None), ({ZONE: "z3"}, None), ({ZONE: "z2", "x": "y"}, None),
                               ({ZONE: "z2"}, required), ({}, required)]:
        p = pod("p", node_selector=selector, affinity=affinity)
        for nodes in [every, every[:1], [n for n in every if n.labels.get(ZONE) == "z1"]]:
            _check_batches(REGISTRY["NodeAffinity"], p, nodes)
