"""InterPodAffinity: reasons, codes and scores as kube-scheduler's plugin gives them
(pkg/scheduler/framework/plugins/interpodaffinity, and https://kubernetes.io/docs/concepts/scheduling-eviction/
assign-pod-node/#inter-pod-affinity-and-anti-affinity)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.framework import ClusterView, Code, Profile
from scheduler.model import PodInfo, PodSpecError
from scheduler.plugins.inter_pod_affinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    PLUGIN,
    InterPodAffinityArgs,
)
from tests.scheduler.builders import node, pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(labels: dict[str, str] | None, topology: str = HOST, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": topology, **extra}
    if labels is not None:
        out["labelSelector"] = {"matchLabels": labels}
    return out


def labelled(name: str, labels: dict[str, str], affinity: dict[str, Any] | None = None,
             namespace: str = "default", node_name: str | None = None) -> PodInfo:
    return pod(name, namespace=namespace, affinity=affinity, node_name=node_name, labels=labels)


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "podAffinityTerm": t} for w, t in weighted]}}


def verdicts(incoming: PodInfo, nodes: list, namespaces: dict | None = None) -> dict[str, tuple]:
    cluster = ClusterView(nodes, namespaces)
    return {n.name: (s.code, s.reasons) if not s.ok else None
            for n in nodes for s in [PLUGIN.filter(incoming, n, PLUGIN.default_args(), cluster)]}


WEB = {"app": "web"}
ANTI_WEB = required("podAntiAffinity", term(WEB))


def test_required_anti_affinity_keeps_one_pod_per_hostname() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB)]), node("b")]
    assert verdicts(labelled("web-1", WEB, ANTI_WEB), nodes) == {
        "a": (Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,)), "b": None}


def test_existing_pods_anti_affinity_rejects_the_incoming_pod() -> None:
    guard = labelled("guard", {"app": "db"}, required("podAntiAffinity", term(WEB, ZONE)))
    nodes = [node("a", labels={ZONE: "z1"}, pods_on_it=[guard]), node("b", labels={ZONE: "z1"}),
             node("c", labels={ZONE: "z2"})]
    want = (Code.UNSCHEDULABLE, (EXISTING_ANTI_AFFINITY_REASON,))
    assert verdicts(labelled("web", WEB), nodes) == {"a": want, "b": want, "c": None}
    assert verdicts(labelled("other", {"app": "api"}), nodes) == {"a": None, "b": None, "c": None}


def test_required_affinity_follows_the_matching_pods_zone() -> None:
    nodes = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}, pods_on_it=[labelled("db", {"app": "db"})]),
             node("c", labels={ZONE: "z2"}), node("d")]
    incoming = labelled("web", WEB, required("podAffinity", term({"app": "db"}, ZONE)))
    want = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY_REASON,))
    assert verdicts(incoming, nodes) == {"a": None, "b": None, "c": want, "d": want}


def test_first_pod_of_a_group_with_affinity_to_itself_may_go_where_the_topology_label_is() -> None:
    nodes = [node("a", labels={ZONE: "z1"}), node("b")]
    itself = labelled("web-0", WEB, required("podAffinity", term(WEB, ZONE)))
    want = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY_REASON,))
    assert verdicts(itself, nodes) == {"a": None, "b": want}
    # A pod whose terms do not select itself gets no such exception.
    assert verdicts(labelled("api", {"app": "api"}, required("podAffinity", term(WEB, ZONE))), nodes) == {
        "a": want, "b": want}


def test_terms_select_the_stating_pods_namespace_unless_told_otherwise() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB, namespace="team-a")]), node("b")]
    assert verdicts(labelled("web-1", WEB, ANTI_WEB, namespace="team-b"), nodes) == {"a": None, "b": None}
    listed = required("podAntiAffinity", term(WEB, namespaces=["team-a"]))
    assert verdicts(labelled("web-1", WEB, listed, namespace="team-b"), nodes)["a"] == (
        Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,))


def test_namespace_selector_reads_the_namespaces_labels() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB, namespace="team-a")]), node("b")]
    by_label = required("podAntiAffinity", term(WEB, namespaceSelector={"matchLabels": {"tier": "prod"}}))
    incoming = labelled("web-1", WEB, by_label, namespace="team-b")
    assert verdicts(incoming, nodes, {"team-a": {"tier": "prod"}})["a"] == (
        Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,))
    assert verdicts(incoming, nodes, {"team-a": {"tier": "dev"}})["a"] is None
    every = required("podAntiAffinity", term(WEB, namespaceSelector={}))
    assert verdicts(labelled("web-1", WEB, every, namespace="team-b"), nodes)["a"] is not None


def test_match_label_keys_narrow_the_selector_to_the_pods_own_revision() -> None:
    old = labelled("web-old", {"app": "web", "pod-template-hash": "v1"})
    nodes = [node("a", pods_on_it=[old]), node("b")]
    anti = required("podAntiAffinity", term(WEB, matchLabelKeys=["pod-template-hash"]))
    same_revision = labelled("web-new", {"app": "web", "pod-template-hash": "v1"}, anti)
    new_revision = labelled("web-new", {"app": "web", "pod-template-hash": "v2"}, anti)
    assert verdicts(same_revision, nodes)["a"] == (Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,))
    assert verdicts(new_revision, nodes)["a"] is None
    mismatch = required("podAntiAffinity", term(WEB, mismatchLabelKeys=["pod-template-hash"]))
    assert verdicts(labelled("x", {"app": "web", "pod-template-hash": "v1"}, mismatch), nodes)["a"] is None


def test_a_missing_label_selector_selects_no_pod() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB)])]
    assert verdicts(labelled("web-1", WEB, required("podAntiAffinity", term(None))), nodes) == {"a": None}


def test_pods_stating_no_affinity_cost_no_per_node_check() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB)]), node("b")]
    args = PLUGIN.default_args()
    assert PLUGIN.prepare_filter(labelled("x", WEB), args, ClusterView(nodes)) is None
    assert PLUGIN.prepare_score(labelled("x", WEB), args, ClusterView(nodes)) is None


@pytest.mark.parametrize("bad", [
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}},
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "podAffinityTerm": term(WEB)}]}},
    {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(None, labelSelector={"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]})]}},
])
def test_malformed_terms_name_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(PodSpecError) as err:
        pod("p", affinity=bad)
    assert err.value.field.startswith("spec.affinity.pod")


def test_failed_scheduling_message_counts_each_reason() -> None:
    nodes = [node("a", pods_on_it=[labelled("web-0", WEB)]), node("b", pods_on_it=[labelled("web-1", WEB)])]
    result = Profile.default().schedule(labelled("web-2", WEB, ANTI_WEB), nodes, random.Random(0))
    assert result.message == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    assert result.rejected_by == frozenset({"InterPodAffinity"})


# -- score ----------------------------------------------------------------------------------------

def scores(incoming: PodInfo, nodes: list, args: InterPodAffinityArgs | None = None) -> list[int]:
    return PLUGIN.score_nodes(incoming, nodes, args)


def test_preferred_terms_add_and_subtract_their_weights_per_domain() -> None:
    nodes = [node("a", labels={ZONE: "z1"}, pods_on_it=[labelled("db", {"app": "db"})]),
             node("b", labels={ZONE: "z1"}),
             node("c", labels={ZONE: "z2"}, pods_on_it=[labelled("cache", {"app": "cache"})]),
             node("d", labels={ZONE: "z3"})]
    affinity = {**preferred("podAffinity", (80, term({"app": "db"}, ZONE))),
                **preferred("podAntiAffinity", (20, term({"app": "cache"}, ZONE)))}
    incoming = labelled("web", WEB, affinity)
    assert [PLUGIN.score(incoming, n, cluster=ClusterView(nodes)) for n in nodes] == [80, 80, -20, 0]
    # min..max: (s - (-20)) / 100 * 100
    assert scores(incoming, nodes) == [100, 100, 0, 20]


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    """An existing pod's required affinity the incoming pod matches counts hardPodAffinityWeight; its
    preferred terms count their weights; ignorePreferredTermsOfExistingPods drops both."""
    fan = labelled("fan", {"app": "fan"}, {**required("podAffinity", term(WEB)),
                                           **preferred("podAntiAffinity", (5, term(WEB)))})
    nodes = [node("a", pods_on_it=[fan]), node("b"), node("c")]
    incoming = labelled("web", WEB)
    cluster = ClusterView(nodes)
    raw = [PLUGIN.score(incoming, n, InterPodAffinityArgs(hardPodAffinityWeight=10), cluster) for n in nodes]
    assert raw == [10 - 5, 0, 0]
    assert scores(incoming, nodes, InterPodAffinityArgs(ignorePreferredTermsOfExistingPods=True)) == [0, 0, 0]
    assert scores(incoming, nodes) == [0, 100, 100]  # default weight 1: 1 - 5 = -4 is the minimum


def test_normalize_truncates_like_float_arithmetic() -> None:
    raw = [0, 29, 100]
    PLUGIN.normalize(raw, PLUGIN.default_args())  # 100 * (29 / 100) is 28.999... in floating point
    assert raw == [0, 28, 100]


def _brute_force_scores(pod_: PodInfo, cluster: ClusterView, args: InterPodAffinityArgs) -> dict[str, int]:
    """InterPodAffinity's raw score of every node, read the long way: every counted pod, every term."""
    domains: dict[tuple[str, str], int] = {}

    def add(key: str, labels: dict, amount: int) -> None:
        if key in labels:
            domains[(key, labels[key])] = domains.get((key, labels[key]), 0) + amount

    own = pod_.pod_affinity
    for labels, other in cluster.pods():
        if own is not None:
            ns = cluster.labels_of_namespace(other.namespace)
            for weighted, sign in [*((w, 1) for w in own.preferred_affinity),
                                   *((w, -1) for w in own.preferred_anti_affinity)]:
                if weighted.term.matches(other.namespace, other.labels, ns):
                    add(weighted.term.topology_key, labels, sign * weighted.weight)
        theirs = other.pod_affinity
        if theirs is None or args.ignorePreferredTermsOfExistingPods:
            continue
        ns = cluster.labels_of_namespace(pod_.namespace)
        for term in theirs.required_affinity if args.hardPodAffinityWeight > 0 else ():
            if term.matches(pod_.namespace, pod_.labels, ns):
                add(term.topology_key, labels, args.hardPodAffinityWeight)
        for weighted, sign in [*((w, 1) for w in theirs.preferred_affinity),
                               *((w, -1) for w in theirs.preferred_anti_affinity)]:
            if weighted.term.matches(pod_.namespace, pod_.labels, ns):
                add(weighted.term.topology_key, labels, sign * weighted.weight)
    return {n.name: sum(domains.get((k, v), 0) for k, v in n.labels.items()) for n in cluster.nodes}


def _random_affinity(rng: random.Random) -> dict[str, Any] | None:
    def term() -> dict[str, Any]:
        return {"labelSelector": {"matchLabels": {"app": rng.choice("ab")}},
                "topologyKey": rng.choice([HOST, ZONE])}

    affinity: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: dict[str, Any] = {}
        if rng.random() < 0.4:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term()} for _ in range(rng.randint(1, 2))]
        if kind == "podAffinity" and rng.random() < 0.2:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [term()]
        if block:
            affinity[kind] = block
    return affinity or None


@pytest.mark.parametrize("seed", range(6))
def test_scores_from_the_pod_index_equal_reading_every_pod(seed: int) -> None:
    """The score reads kept counts of the snapshot's pod index; as pods come and go through the cache, every
    node's raw score stays what reading every pod and term gives."""
    from scheduler.runtime.cache import Cache
    from tests.scheduler.builders import node_obj, pod_obj

    rng = random.Random(seed)
    cache = Cache()
    for i in range(12):
        cache.add_node(node_obj(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i % 3}"}))
    placed: list[PodInfo] = []
    args_variants = [InterPodAffinityArgs(), InterPodAffinityArgs(hardPodAffinityWeight=0),
                     InterPodAffinityArgs(ignorePreferredTermsOfExistingPods=True)]
    for step in range(120):
        incoming = PodInfo.from_api(pod_obj(f"p{step}", labels={"app": rng.choice("abc")},
                                            affinity=_random_affinity(rng)))
        snap = cache.snapshot()
        cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index)
        args = rng.choice(args_variants)
        state = PLUGIN.pre_score(incoming, args, cluster, snap.nodes)
        ours = {n.name: PLUGIN.score_node(state, n) if state is not None else 0 for n in snap.nodes}
        assert ours == _brute_force_scores(incoming, cluster, args), step
        placed.append(cache.assume(incoming, f"n{rng.randrange(12)}"))
        if rng.random() < 0.3:
            cache.forget(placed.pop(rng.randrange(len(placed))).uid)
