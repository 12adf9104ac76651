"""Preemption (scheduler.framework.preemption): eligibility, victim selection, candidate ordering and the messages,
as kube-scheduler's DefaultPreemption decides them. Each case names the upstream test it mirrors
(pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go unless said otherwise)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

from scheduler.config import ProfileConfig, parse_config
from scheduler.framework import ClusterView, Code, Profile
from scheduler.framework.preemption import (
    Candidate,
    PodDisruptionBudget,
    pick_candidate,
    preempt,
    select_victims,
)
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.volumes import VolumeStore
from scheduler.plugins.default_preemption import DefaultPreemptionArgs
from tests.scheduler.builders import (
    claim_obj,
    claim_volume,
    node,
    on_node,
    pod_obj,
    pv_obj,
    storage_class_obj,
)

PROFILE = Profile.default("my-custom-scheduler")
ARGS = DefaultPreemptionArgs()


def prio_pod(name: str, priority: int, cpu: str = "1", *, start: str = "", node_name: str | None = None,
             labels: dict[str, str] | None = None, never: bool = False, nominated: str = "",
             terminating: bool = False) -> PodInfo:
    obj: dict[str, Any] = pod_obj(name, requests={"cpu": cpu}, node_name=node_name, labels=labels)
    obj["spec"]["priority"] = priority
    if never:
        obj["spec"]["preemptionPolicy"] = "Never"
    if start:
        obj["status"]["startTime"] = start
    if nominated:
        obj["status"]["nominatedNodeName"] = nominated
    if terminating:
        obj["metadata"]["deletionTimestamp"] = "2026-11-24T07:00:00Z"
        obj["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                        "reason": "PreemptionByScheduler"}]
    return PodInfo.from_api(obj)


def full_node(name: str, *pods: PodInfo, cpu: str = "4") -> NodeInfo:
    return node(name, cpu=cpu, pods_on_it=[_on(p, name) for p in pods])


def _on(p: PodInfo, node_name: str) -> PodInfo:
    p.node_name = node_name
    return p


def run(pod: PodInfo, nodes: list[NodeInfo], pdbs: list[PodDisruptionBudget] = (), args: DefaultPreemptionArgs = ARGS,
        nominated: dict | None = None):
    cluster = ClusterView(nodes)
    result = PROFILE.schedule(pod, nodes, random.Random(0), cluster)
    assert result.node_name is None, "the test pod must fit nowhere before preemption"
    return result, preempt(PROFILE, args, pod, result, nodes, cluster, pdbs, nominated or {}, random.Random(0))


def pdb(name: str, labels: dict[str, str], allowed: int, disrupted: tuple[str, ...] = ()) -> PodDisruptionBudget:
    return PodDisruptionBudget.from_api({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2026-11-24T07:00:00Z" for p in disrupted}},
    })


# -- victims on one node (TestSelectNodesForPreemption) -------------------------------------------

def test_only_lower_priority_pods_are_victims_and_the_most_important_are_reprieved() -> None:
    # "a pod that would fit on the machines, but other pods running are higher priority, no preemption would
    # happen" and "medium priority pod is preempted, but lower priority one stays as it is small".
    n = full_node("n1", prio_pod("low-small", 0, "1", start="2026-11-24T06:00:00Z"),
                  prio_pod("mid-big", 50, "2"), prio_pod("high", 200, "1"))
    found = select_victims(PROFILE, prio_pod("p", 100, "2"), n, ClusterView([n]), [])
    assert isinstance(found, Candidate)
    assert [v.name for v in found.victims] == ["mid-big"]


def test_no_lower_priority_pod_means_no_victims() -> None:
    n = full_node("n1", prio_pod("a", 100, "4"))
    found = select_victims(PROFILE, prio_pod("p", 100, "1"), n, ClusterView([n]), [])
    assert found.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert found.reasons == ("No preemption victims found for incoming pod",)


def test_a_node_too_small_even_when_emptied_is_no_candidate() -> None:
    n = full_node("n1", prio_pod("a", 0, "1"), cpu="2")
    found = select_victims(PROFILE, prio_pod("p", 100, "3"), n, ClusterView([n]), [])
    assert found.reasons == ("Insufficient cpu",)


def test_victims_of_equal_priority_go_latest_started_first() -> None:
    # MoreImportantPod: equal priority, the pod that started earlier is more important (reprieved first).
    n = full_node("n1", prio_pod("old", 0, "2", start="2026-11-24T05:00:00Z"),
                  prio_pod("new", 0, "2", start="2026-11-24T06:00:00Z"))
    found = select_victims(PROFILE, prio_pod("p", 100, "2"), n, ClusterView([n]), [])
    assert [v.name for v in found.victims] == ["new"]


def test_pdb_violating_pods_are_reprieved_before_the_others() -> None:
    # "preemption with violation of same pdb" / filterPodsWithPDBViolation: the budget allows 1 disruption,
    # the second covered pod violates it; reprieving violating pods first spares it.
    pods = [prio_pod("a", 10, "1", labels={"app": "db"}), prio_pod("b", 10, "1", labels={"app": "db"}),
            prio_pod("c", 5, "1"), prio_pod("d", 5, "1")]
    n = full_node("n1", *pods)
    found = select_victims(PROFILE, prio_pod("p", 100, "2"), n, ClusterView([n]), [pdb("db", {"app": "db"}, 1)])
    assert sorted(v.name for v in found.victims) == ["c", "d"]
    assert found.pdb_violations == 0


def test_a_pod_already_disrupted_spends_no_budget() -> None:
    # "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to
    # DisruptedPods": a is in disruptedPods, so evicting a and b spends only one of one allowed.
    pods = [prio_pod("a", 10, "2", labels={"app": "db"}), prio_pod("b", 10, "2", labels={"app": "db"})]
    n = full_node("n1", *pods)
    found = select_victims(PROFILE, prio_pod("p", 100, "4"), n, ClusterView([n]),
                           [pdb("db", {"app": "db"}, 1, disrupted=("a",))])
    assert len(found.victims) == 2
    assert found.pdb_violations == 0
    found = select_victims(PROFILE, prio_pod("p", 100, "4"), n, ClusterView([n]), [pdb("db", {"app": "db"}, 1)])
    assert found.pdb_violations == 1


# -- choosing the node (TestPickOneNodeForPreemption, preemption_test.go) ----------------------------

def cand(node_name: str, *victims: tuple[int, str], violations: int = 0) -> Candidate:
    return Candidate(node_name, [prio_pod(f"{node_name}-{i}", p, start=s) for i, (p, s) in enumerate(victims)],
                     violations)


T1, T2 = "2026-11-24T05:00:00Z", "2026-11-24T06:00:00Z"


@pytest.mark.parametrize(("case", "candidates", "chosen"), [
    ("fewest PDB violations", [cand("a", (0, T1), violations=1), cand("b", (50, T1))], "b"),
    ("machine with min highest priority pod is picked", [cand("a", (20, T1)), cand("b", (10, T1), (10, T1))], "b"),
    ("when highest priorities are the same, minimum sum of lower priority pods is picked",
     [cand("a", (10, T1), (5, T1)), cand("b", (10, T1), (1, T1))], "b"),
    ("sum of adjusted priorities is considered",  # each shifted by 2^31: fewer negative-priority pods win
     [cand("a", (-10, T1), (-10, T1)), cand("b", (-10, T1))], "b"),
    ("same priority, same number of victims, different start time for each node's pod",
     [cand("a", (10, T1)), cand("b", (10, T2))], "b"),
    ("all tied: the first candidate", [cand("a", (10, T1)), cand("b", (10, T1))], "a"),
])
def test_candidate_order(case: str, candidates: list[Candidate], chosen: str) -> None:
    assert pick_candidate(candidates).node == chosen, case


# -- the whole step and its messages ---------------------------------------------------------------

def test_preempts_on_the_node_with_the_cheapest_victims() -> None:
    nodes = [full_node("n1", prio_pod("a", 50, "4")), full_node("n2", prio_pod("b", 10, "4"))]
    _, outcome = run(prio_pod("p", 100, "2"), nodes)
    assert outcome.node == "n2"
    assert [v.name for v in outcome.victims] == ["b"]
    assert outcome.message == ""


def test_never_policy_is_not_eligible() -> None:
    # TestPodEligibleToPreemptOthers "Pod with preemptionPolicy=Never"
    nodes = [full_node("n1", prio_pod("a", 0, "4"))]
    result, outcome = run(prio_pod("p", 100, "2", never=True), nodes)
    assert outcome.node is None
    assert f"{result.message} {outcome.message}" == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")


def test_a_terminating_victim_on_the_nominated_node_makes_the_pod_wait() -> None:
    # TestPodEligibleToPreemptOthers "victim Pods terminating" / "Pod with nominated node"
    nodes = [full_node("n1", prio_pod("a", 0, "4", terminating=True))]
    _, outcome = run(prio_pod("p", 100, "2", nominated="n1"), nodes)
    assert outcome.message == "preemption: not eligible due to a terminating pod on the nominated node."
    _, outcome = run(prio_pod("p", 100, "2"), nodes)  # not nominated there: preempts
    assert outcome.node == "n1"


def test_no_victims_message_counts_unresolvable_nodes_as_not_helpful() -> None:
    nodes = [full_node("n1", prio_pod("a", 100, "4")), full_node("n2", prio_pod("b", 200, "4")),
             node("cp", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])]
    result, outcome = run(prio_pod("p", 100, "2"), nodes)
    assert outcome.node is None and outcome.clear_nomination
    assert f"{result.message} {outcome.message}" == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.")


def test_a_pdb_makes_preemption_pick_the_node_whose_eviction_violates_none() -> None:
    # TestSelectCandidate / pickOneNodeForPreemption rule 1, with the budget on the cheaper node's pod.
    nodes = [full_node("n1", prio_pod("guarded", 10, "4", labels={"app": "db"})),
             full_node("n2", prio_pod("plain", 20, "4"))]
    _, outcome = run(prio_pod("p", 100, "2"), nodes, [pdb("db", {"app": "db"}, 0)])
    assert outcome.node == "n2"
    _, outcome = run(prio_pod("p", 100, "2"), nodes)
    assert outcome.node == "n1"


def test_nominated_pods_of_equal_or_higher_priority_count_on_their_node() -> None:
    # RunFilterPluginsWithNominatedPods: a 2-cpu pod nominated to the emptied n1 keeps a lower-priority
    # pod off it; one of lower priority does not count.
    nodes = [full_node("n1", prio_pod("a", 0, "2")), full_node("n2", prio_pod("b", 0, "4"))]
    waiting = prio_pod("w", 100, "2", nominated="n1")
    result = PROFILE.schedule(prio_pod("p", 50, "2"), nodes, random.Random(0), ClusterView(nodes), {"n1": [waiting]})
    assert result.node_name is None
    assert result.failures["n1"].reasons == ("Insufficient cpu",)
    result = PROFILE.schedule(prio_pod("p", 50, "2"), nodes, random.Random(0), ClusterView(nodes), {})
    assert result.node_name == "n1"


def test_candidates_sampled_as_the_args_say() -> None:
    # TestCalculateNumCandidates (numNodes, percentage, absolute -> candidates)
    assert DefaultPreemptionArgs().num_candidates(0) == 0
    assert DefaultPreemptionArgs(minCandidateNodesPercentage=50, minCandidateNodesAbsolute=2).num_candidates(10) == 5
    assert DefaultPreemptionArgs(minCandidateNodesPercentage=20, minCandidateNodesAbsolute=5).num_candidates(10) == 5
    assert DefaultPreemptionArgs(minCandidateNodesPercentage=50, minCandidateNodesAbsolute=50).num_candidates(10) == 10
    assert ARGS.num_candidates(5000) == 500
    assert ARGS.num_candidates(500) == 100


# -- configuration (validation_pluginargs_test.go TestValidateDefaultPreemptionArgs) ---------------

@pytest.mark.parametrize(("args", "problems"), [
    ({"minCandidateNodesPercentage": -1}, ["minCandidateNodesPercentage: -1 is not in valid range [0, 100]"]),
    ({"minCandidateNodesPercentage": 900}, ["minCandidateNodesPercentage: 900 is not in valid range [0, 100]"]),
    ({"minCandidateNodesAbsolute": -1}, ["minCandidateNodesAbsolute: -1 is not in valid range [0, inf)"]),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     ["minCandidateNodesPercentage: cannot be zero at the same time as minCandidateNodesAbsolute",
      "minCandidateNodesAbsolute: cannot be zero at the same time as minCandidateNodesPercentage"]),
])
def test_args_validated_as_kube_scheduler(args: dict[str, int], problems: list[str]) -> None:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}
    with pytest.raises(ValueError) as err:
        parse_config(config)
    for problem in problems:
        assert f"profiles[0].pluginConfig[0].args.{problem}" in str(err.value)


def test_default_profile_preempts_and_can_be_disabled() -> None:
    assert PROFILE.post_filter is not None and PROFILE.post_filter[0].name == "DefaultPreemption"
    off = ProfileConfig(schedulerName="s", plugins={"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}})
    assert Profile.from_resolved(off.resolve()).post_filter is None
    with pytest.raises(ValidationError, match="plugin DefaultPreemption does not extend Filter plugin"):
        ProfileConfig(schedulerName="s", plugins={"filter": {"enabled": [{"name": "DefaultPreemption"}]}})


def test_a_pod_with_a_bound_claim_preempts_like_any_other() -> None:
    """The dry run judges the node with victims removed in a view that still holds the claims, PVs and
    StorageClasses (a view without them made VolumeBinding reject the pod outright in the dry run)."""
    claim = claim_obj("data", volume_name="pv-1", bound=True, storage_class="local")
    volumes = VolumeStore.of([claim, pv_obj("pv-1", node_terms=on_node("n1")), storage_class_obj("local")])
    obj = pod_obj("p", requests={"cpu": "2"})
    obj["spec"]["priority"] = 100
    obj["spec"]["volumes"] = [claim_volume("data")]
    preemptor = PodInfo.from_api(obj)
    nodes = [full_node("n1", prio_pod("a", 10, "4")), full_node("n2", prio_pod("b", 10, "4"))]
    cluster = ClusterView(nodes, volumes=volumes)
    result = PROFILE.schedule(preemptor, nodes, random.Random(0), cluster)
    assert result.node_name is None
    outcome = preempt(PROFILE, ARGS, preemptor, result, nodes, cluster, [], {}, random.Random(0))
    assert outcome.node == "n1" and [v.name for v in outcome.victims] == ["a"]


def test_a_nominated_pod_takes_the_room_made_for_it_when_it_fits_there() -> None:
    """kube-scheduler's evaluateNominatedNode: the nominated node is tried first and taken if it fits, even
    when scoring would prefer another node (the victims died for that room)."""
    nodes = [full_node("n1", prio_pod("a", 10, "3")), full_node("n2", cpu="8")]
    waiting = prio_pod("p", 100, "1", nominated="n1")
    assert PROFILE.schedule(waiting, nodes, random.Random(0), ClusterView(nodes)).node_name == "n1"
    plain = prio_pod("q", 100, "1")
    assert PROFILE.schedule(plain, nodes, random.Random(0), ClusterView(nodes)).node_name == "n2"
    too_big = prio_pod("r", 100, "2", nominated="n1")  # no longer fits there: the usual search
    assert PROFILE.schedule(too_big, nodes, random.Random(0), ClusterView(nodes)).node_name == "n2"


# -- what-if pods in the cluster-wide PreFilter state (PreFilterExtensions AddPod/RemovePod) ---------

def _anti(labels: dict[str, str], key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}}


def _with(p: PodInfo, **spec: Any) -> PodInfo:
    """``p`` re-parsed with extra spec fields (affinity, topologySpreadConstraints)."""
    obj = pod_obj(p.name, requests={"cpu": "1"}, labels=dict(p.labels), node_name=p.node_name or None)
    obj["spec"].update(priority=p.priority, **spec)
    if p.nominated_node_name:
        obj["status"]["nominatedNodeName"] = p.nominated_node_name
    return PodInfo.from_api(obj)


def test_anti_affinity_to_a_pod_nominated_to_a_node_keeps_the_pod_off_that_node() -> None:
    # addGENominatedPods -> InterPodAffinity AddPod: the nominated pod is in the affinity index while n1 is
    # judged, so required anti-affinity against it rules n1 out, by hostname or by zone. Only n1: upstream
    # adds the pods nominated to the node being judged, so n2 (same zone) is judged without it.
    zone = {"topology.kubernetes.io/zone": "a"}
    nodes = [node("n1", labels=zone), node("n2", labels=zone),
             node("n3", labels={"topology.kubernetes.io/zone": "b"})]
    waiting = prio_pod("w", 100, labels={"app": "db"}, nominated="n1")
    for key, kept_off in (("kubernetes.io/hostname", {"n1"}), ("topology.kubernetes.io/zone", {"n1"})):
        p = _with(prio_pod("p", 50), affinity=_anti({"app": "db"}, key))
        result = PROFILE.schedule(p, nodes, random.Random(0), ClusterView(nodes), {"n1": [waiting]})
        assert set(result.failures) == kept_off, key
        assert result.failures["n1"].reasons == ("node(s) didn't match pod anti-affinity rules",)
    # The index is put back after the what-if: the same view without the nomination lets the pod onto n1.
    cluster = ClusterView(nodes)
    p = _with(prio_pod("p", 50), affinity=_anti({"app": "db"}))
    assert "n1" in PROFILE.schedule(p, nodes, random.Random(0), cluster, {"n1": [waiting]}).failures
    assert "n1" in PROFILE.schedule(p, nodes, random.Random(0), cluster, {}).feasible_nodes
    # The nominated pod's own anti-affinity counts (AddPod updates existing pods' anti-affinity counts) when
    # InterPodAffinity has something to check for the pod; a pod it skipped at PreFilter (no terms of its
    # own, no existing pod's anti-affinity against it) stays skipped, as upstream keeps SkipFilterPlugins.
    guarded = _with(waiting, affinity=_anti({"app": "web"}))
    q = prio_pod("q", 50, labels={"app": "web"})
    assert "n1" not in PROFILE.schedule(q, nodes, random.Random(0), ClusterView(nodes), {"n1": [guarded]}).failures
    q = _with(q, affinity=_anti({"app": "none-such"}))
    result = PROFILE.schedule(q, nodes, random.Random(0), ClusterView(nodes), {"n1": [guarded]})
    assert result.failures["n1"].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


def test_topology_spread_counts_a_nominated_pod_in_its_domain() -> None:
    # PodTopologySpread AddPod: zone a holds one matching pod and one nominated to n1, zone b one; with
    # maxSkew 1 a third pod in zone a makes skew 2, so only zone b is left.
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    web = {"app": "web"}
    nodes = [node("n1", labels={"topology.kubernetes.io/zone": "a"}),
             node("n2", labels={"topology.kubernetes.io/zone": "a"}, pods_on_it=[_on(prio_pod("x", 0, labels=web), "n2")]),
             node("n3", labels={"topology.kubernetes.io/zone": "b"}, pods_on_it=[_on(prio_pod("y", 0, labels=web), "n3")])]
    waiting = prio_pod("w", 100, labels=web, nominated="n1")
    p = _with(prio_pod("p", 50, labels=web), topologySpreadConstraints=spread)
    result = PROFILE.schedule(p, nodes, random.Random(0), ClusterView(nodes), {"n1": [waiting]})
    assert result.failures["n1"].reasons == ("node(s) didn't match pod topology spread constraints",)
    # Without the nomination n1 (zone a, skew 1) fits.
    assert "n1" in PROFILE.schedule(p, nodes, random.Random(0), ClusterView(nodes), {}).feasible_nodes


def test_preemption_evicts_the_pod_an_anti_affinity_term_objects_to() -> None:
    # SelectVictimsOnNode -> InterPodAffinity RemovePod: the preemptor's required anti-affinity matches the
    # lower-priority pod on n1; evicting it is what makes n1 fit (cpu is plentiful).
    nodes = [full_node("n1", prio_pod("db", 10, labels={"app": "db"}), cpu="8"),
             full_node("n2", prio_pod("db2", 200, labels={"app": "db"}), cpu="8")]
    preemptor = _with(prio_pod("p", 100), affinity=_anti({"app": "db"}))
    result, outcome = run(preemptor, nodes)
    assert result.failures["n1"].reasons == ("node(s) didn't match pod anti-affinity rules",)
    assert outcome.node == "n1" and [v.name for v in outcome.victims] == ["db"]
    # The same with the term on the victim (existing pods' anti-affinity against the preemptor).
    nodes = [full_node("n1", _with(prio_pod("guard", 10), affinity=_anti({"app": "web"})), cpu="8")]
    result, outcome = run(prio_pod("p", 100, labels={"app": "web"}), nodes)
    assert outcome.node == "n1" and [v.name for v in outcome.victims] == ["guard"]


def test_a_nominated_pod_the_cache_holds_bound_counts_where_it_is_bound() -> None:
    # The informer adds a bound pod to the cache before the nominator forgets its nomination: the pod
    # counts on the node it is bound to, not also on the one it was nominated to, and the shared affinity
    # index keeps it (it was lost, and the next snapshot failed with KeyError, when it was added and removed
    # again under the same uid).
    bound = _on(prio_pod("w", 100, labels={"app": "db"}), "n2")
    nodes = [node("n1"), node("n2", pods_on_it=[bound])]
    cluster = ClusterView(nodes)
    still_nominated = prio_pod("w", 100, labels={"app": "db"}, nominated="n1")
    assert still_nominated.uid == bound.uid
    p = _with(prio_pod("p", 50), affinity=_anti({"app": "db"}))
    result = PROFILE.schedule(p, nodes, random.Random(0), cluster, {"n1": [still_nominated]})
    assert result.feasible_nodes == ["n1"]
    assert cluster.index.holds(bound.uid)


def test_topology_spread_counts_a_nominated_pod_without_recounting_the_cluster() -> None:
    """PodTopologySpread updates its counts for the one node (replace_node) instead of running pre_filter
    over every node again for each node with nominated pods."""
    from scheduler.plugins import pod_topology_spread

    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    nodes = [node(f"n{i}", labels={"topology.kubernetes.io/zone": f"z{i % 3}"}) for i in range(30)]
    nominated = {f"n{i}": [prio_pod(f"w{i}", 100, labels={"app": "web"}, nominated=f"n{i}")] for i in range(10)}
    p = _with(prio_pod("p", 50, labels={"app": "web"}), topologySpreadConstraints=spread)
    calls = []
    plugin, original = pod_topology_spread.PLUGIN, pod_topology_spread.PLUGIN.pre_filter
    object.__setattr__(plugin, "pre_filter", lambda *a: calls.append(1) or original(*a))  # a frozen dataclass
    try:
        result = Profile.default().schedule(p, nodes, random.Random(0), ClusterView(nodes), nominated)
    finally:
        object.__setattr__(plugin, "pre_filter", original)
    assert len(calls) == 1
    # Judged with its own nominated web pod, each of n0-n9 makes its zone's count 1 against 0 elsewhere:
    # one more there is a skew of 2 (only the judged node's nominated pods count, as upstream).
    assert set(result.failures) == {f"n{i}" for i in range(10)}
    assert result.failures["n0"].reasons == ("node(s) didn't match pod topology spread constraints",)


def test_the_dry_run_counts_victims_out_of_spread_domains_with_one_prefilter() -> None:
    # Zone a holds two low-priority web pods (n1), zone b none with room only for high-priority pods (n2,
    # full). With maxSkew 1 the web preemptor fits n1 only once both are gone: RemovePod moves zone a's
    # count, and PreFilter ran once for the whole preemption (upstream clones the cycle state), not per
    # victim tried.
    from scheduler.plugins import pod_topology_spread

    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    web = {"app": "web"}
    n1 = node("n1", cpu="8", labels={"topology.kubernetes.io/zone": "a"},
              pods_on_it=[_on(prio_pod("w1", 10, labels=web), "n1"), _on(prio_pod("w2", 10, labels=web), "n1")])
    n2 = node("n2", cpu="2", labels={"topology.kubernetes.io/zone": "b"},
              pods_on_it=[_on(prio_pod("h1", 500), "n2"), _on(prio_pod("h2", 500), "n2")])
    preemptor = _with(prio_pod("p", 100, labels=web), topologySpreadConstraints=spread)
    calls = []
    plugin, original = pod_topology_spread.PLUGIN, pod_topology_spread.PLUGIN.pre_filter
    object.__setattr__(plugin, "pre_filter", lambda *a: calls.append(1) or original(*a))  # a frozen dataclass
    try:
        result, outcome = run(preemptor, [n1, n2])
    finally:
        object.__setattr__(plugin, "pre_filter", original)
    assert result.failures["n1"].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert outcome.node == "n1" and sorted(v.name for v in outcome.victims) == ["w1", "w2"]
    assert len(calls) == 2  # the scheduling attempt's PreFilter and the dry run's


def test_a_plugin_active_at_prefilter_stays_active_for_pods_nominated_to_a_what_if_copy() -> None:
    # InterPodAffinity is active only because of victim v's anti-affinity against web. With v gone it has
    # nothing to check on the copy, but the pod nominated to n1 (higher priority, same anti-affinity) is added
    # to that copy next: upstream's AddPod still runs on the plugin's state (its skip set is fixed at the
    # cycle's PreFilter), so evicting v does not help and nothing is evicted.
    anti_web = _anti({"app": "web"})
    victim = _with(prio_pod("v", 10, labels={"app": "v"}), affinity=anti_web)
    n1 = full_node("n1", victim, cpu="4")
    waiting = _with(prio_pod("n", 200, labels={"app": "n"}, nominated="n1"), affinity=anti_web)
    preemptor = prio_pod("web", 100, labels={"app": "web"})
    _, outcome = run(preemptor, [n1], nominated={"n1": [waiting]})
    assert outcome.node is None and outcome.victims == []
    assert outcome.message == ("preemption: 0/1 nodes are available: 1 node(s) didn't satisfy existing pods "
                               "anti-affinity rules.")


def test_the_dry_run_opens_no_what_if_view_for_plugins_that_read_only_node_traits(monkeypatch) -> None:
    # A tainted node makes TaintToleration active, a cordoned one NodeUnschedulable: both read the cluster
    # only for those counts, which removing pods does not change, so no what-if view (a copy of the node
    # list, an index swap) is made per verdict.
    opened = []
    real_what_if = ClusterView.what_if
    monkeypatch.setattr(ClusterView, "what_if", lambda self, node: opened.append(node.name) or real_what_if(self, node))
    tainted = node("t", cpu="1", taints=[{"key": "role", "value": "cp", "effect": "NoSchedule"}])
    cordoned = node("c", cpu="1", unschedulable=True)
    nodes = [full_node("n1", prio_pod("low", 10), cpu="1"), tainted, cordoned]
    _, outcome = run(prio_pod("p", 100), nodes)
    assert outcome.node == "n1" and [v.name for v in outcome.victims] == ["low"]
    assert opened == []
