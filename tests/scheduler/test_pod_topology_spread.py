"""Table tests of PodTopologySpread: filter reasons and scores as kube-scheduler's podtopologyspread plugin
gives them, from the behaviour its documentation describes (concepts/scheduling-eviction/
topology-spread-constraints) and the formulas of filtering.go and scoring.go."""

from __future__ import annotations

import random

import pytest

from scheduler.config import ConfigError, parse_config
from scheduler.framework import ClusterView, Code, Profile
from scheduler.model import PodInfo, PodSpecError
from scheduler.plugins import pod_topology_spread
from scheduler.plugins.pod_topology_spread import MISSING_LABEL, REASON
from tests.scheduler.builders import node, pod, pod_obj

ZONE = "topology.kubernetes.io/zone"
FOO = {"foo": "bar"}
PTS = pod_topology_spread.PLUGIN


def constraint(max_skew=1, key=ZONE, when="DoNotSchedule", selector=None, **extra):
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": FOO} if selector is None else selector, **extra}


def incoming(*constraints, labels=FOO, **kwargs) -> PodInfo:
    return pod("incoming", labels=labels, spread=list(constraints), **kwargs)


def foo_pods(count: int, prefix: str, labels=FOO, **kwargs) -> list[PodInfo]:
    return [pod(f"{prefix}-{i}", labels=labels, **kwargs) for i in range(count)]


def zone_node(name, zone, pods=0, labels=None, **kwargs):
    node_labels = {ZONE: zone} if zone is not None else {}
    return node(name, labels={**node_labels, **(labels or {})}, pods_on_it=foo_pods(pods, name), **kwargs)


def verdicts(p: PodInfo, nodes) -> list[str | None]:
    return [None if (s := PTS.filter(p, n, cluster=ClusterView(nodes))).ok else s.reason for n in nodes]


def test_documented_example_goes_to_the_emptier_zone():
    """The documentation's 4-node example: zone A holds 2 matching pods (node1, node2), zone B 1 (node3).
    With maxSkew 1 a pod in zone A would make the skew 3 - 1 = 2: only zone B's nodes fit."""
    nodes = [zone_node("node1", "A", 1), zone_node("node2", "A", 1), zone_node("node3", "B", 1),
             zone_node("node4", "B")]
    assert verdicts(incoming(constraint()), nodes) == [REASON, REASON, None, None]
    # maxSkew 2 allows it
    assert verdicts(incoming(constraint(max_skew=2)), nodes) == [None, None, None, None]


def test_node_without_the_topology_key_is_rejected_as_unresolvable():
    nodes = [zone_node("a", "A"), zone_node("bare", None)]
    status = PTS.filter(incoming(constraint()), nodes[1], cluster=ClusterView(nodes))
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MISSING_LABEL,))
    assert MISSING_LABEL == "node(s) didn't match pod topology spread constraints (missing required label)"


def test_a_pod_not_matching_its_own_selector_adds_nothing_to_the_skew():
    nodes = [zone_node("a", "A", 1), zone_node("b", "B")]
    assert verdicts(incoming(constraint()), nodes) == [REASON, None]  # 1 + 1 - 0 = 2 > 1
    assert verdicts(incoming(constraint(), labels={"other": "x"}), nodes) == [None, None]  # 1 + 0 - 0


def test_min_domains_measures_from_zero_while_domains_are_missing():
    """Two zones with 1 pod each: the skew is 0 + ... from a minimum of 1. With minDomains 3 there are
    fewer domains than asked, so the minimum is 0 and 1 + 1 - 0 = 2 > 1 everywhere."""
    nodes = [zone_node("a", "A", 1), zone_node("b", "B", 1)]
    assert verdicts(incoming(constraint()), nodes) == [None, None]
    assert verdicts(incoming(constraint(minDomains=3)), nodes) == [REASON, REASON]
    assert verdicts(incoming(constraint(minDomains=2)), nodes) == [None, None]


def test_node_affinity_policy_honor_leaves_unselected_nodes_out_of_the_domains():
    """Zone C is empty but the pod's nodeSelector excludes it: with Honor (default) it is no domain, so the
    minimum is zone B's 1; with Ignore it is a domain with 0 pods and zone A (2) is too far from it."""
    nodes = [zone_node("a", "A", 2, labels={"pool": "x"}), zone_node("b", "B", 1, labels={"pool": "x"}),
             zone_node("c", "C")]
    honor = incoming(constraint(max_skew=2), node_selector={"pool": "x"})
    ignore = incoming(constraint(max_skew=2, nodeAffinityPolicy="Ignore"), node_selector={"pool": "x"})
    assert verdicts(honor, nodes)[:2] == [None, None]  # 2 + 1 - 1 = 2
    assert verdicts(ignore, nodes)[:2] == [REASON, None]  # 2 + 1 - 0 = 3


def test_node_taints_policy_honor_leaves_untolerated_nodes_out_of_the_domains():
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [zone_node("a", "A", 1), zone_node("b", "B", 1), zone_node("c", "C", taints=taint)]
    ignored = incoming(constraint())  # nodeTaintsPolicy Ignore (default): zone C counts, minimum 0
    honored = incoming(constraint(nodeTaintsPolicy="Honor"))
    assert verdicts(ignored, nodes)[:2] == [REASON, REASON]
    assert verdicts(honored, nodes)[:2] == [None, None]


def test_counted_pods_share_the_namespace_match_the_selector_and_are_not_terminating():
    other_ns = foo_pods(3, "elsewhere", namespace="other")
    unmatched = foo_pods(3, "unmatched", labels={"foo": "baz"})
    leaving = [PodInfo.from_api({**(o := pod_obj("leaving", labels=FOO)),
                                 "metadata": {**o["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}})]
    nodes = [node("a", labels={ZONE: "A"}, pods_on_it=other_ns + unmatched + leaving), zone_node("b", "B")]
    assert verdicts(incoming(constraint()), nodes) == [None, None]


def test_match_label_keys_count_only_pods_with_the_same_values():
    """matchLabelKeys: pod-template-hash. The old revision's pods (hash v1) in zone A are not counted for a
    v2 pod, so zone A is as empty as zone B."""
    old = foo_pods(2, "old", labels={**FOO, "pod-template-hash": "v1"})
    nodes = [node("a", labels={ZONE: "A"}, pods_on_it=old), zone_node("b", "B")]
    v2 = {**FOO, "pod-template-hash": "v2"}
    assert verdicts(incoming(constraint(), labels=v2), nodes) == [REASON, None]
    assert verdicts(incoming(constraint(matchLabelKeys=["pod-template-hash"]), labels=v2), nodes) == [None, None]


def test_schedule_anyway_does_not_filter():
    nodes = [zone_node("a", "A", 5), zone_node("b", "B")]
    assert verdicts(incoming(constraint(when="ScheduleAnyway")), nodes) == [None, None]


def test_zone_scores_favour_fewer_matching_pods():
    """Feasible domains A and B: weight ln(2 + 2). Raw: n1 (A, 2 pods) 2 x 1.386 = 2.77 -> 3; n2, n3 (B, 1
    pod between them) 1.386 -> 1; n4 lacks the key: ignored. Normalised 100 x (max + min - s) / max:
    n1 100 x 1 / 3 = 33, n2 and n3 100, n4 0."""
    nodes = [zone_node("n1", "A", 2), zone_node("n2", "B", 1), zone_node("n3", "B"), zone_node("n4", None)]
    assert PTS.score_nodes(incoming(constraint(when="ScheduleAnyway")), nodes) == [33, 100, 100, 0]


def test_hostname_scores_count_each_nodes_own_pods():
    """Per-host spreading with maxSkew 1: weight ln(2 + 2); n1 holds 2 matching pods (raw 3), n2 none (0):
    n1 scores 100 x (3 + 0 - 3) / 3 = 0, n2 100."""
    nodes = [zone_node("n1", "A", 2), zone_node("n2", "A")]
    c = constraint(key="kubernetes.io/hostname", when="ScheduleAnyway")
    assert PTS.score_nodes(incoming(c), nodes) == [0, 100]


def test_pods_without_constraints_skip_the_plugin():
    assert PTS.pre_filter(pod("plain"), PTS.default_args(), ClusterView([node("a")])) is None
    assert PTS.pre_score(pod("plain"), PTS.default_args(), ClusterView([node("a")]), [node("a")]) is None


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}, "maxSkew"),
        ({"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}, "topologyKey"),
        ({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable"),
        (constraint(nodeTaintsPolicy="Always"), "nodeTaintsPolicy"),
        (constraint(selector={"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["1"]}]}),
         "labelSelector.matchExpressions[0].operator"),
    ],
)
def test_unreadable_constraints_name_the_field(item, field):
    with pytest.raises(PodSpecError) as err:
        PodInfo.from_api(pod_obj("bad", spread=[item]))
    assert err.value.field == f"spec.topologySpreadConstraints[0].{field}"


@pytest.mark.parametrize("args", [{"defaultingType": "System"},
                                  {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                           "whenUnsatisfiable": "ScheduleAnyway"}]}])
def test_default_constraints_are_refused_by_name(args):
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": "PodTopologySpread", "args": args}]}]}
    with pytest.raises(ConfigError, match=r"pluginConfig\[0\]\.args\.default.*(Services|watch)"):
        parse_config(config)


def test_default_profile_keeps_zones_within_max_skew_one_pod_at_a_time():
    """Three zones of two nodes; ten pods with a DoNotSchedule zone constraint, each assumed on its node
    before the next is decided: the zones end with 3, 3 and 4, and the FailedScheduling message counts the
    nodes whose zone would break maxSkew."""
    nodes = [zone_node(f"{z}{i}", z) for z in "ABC" for i in range(2)]
    profile = Profile.default("s")
    rng = random.Random(1)
    for i in range(10):
        p = pod(f"p{i}", labels=FOO, spread=[constraint()])
        result = profile.schedule(p, nodes, rng)
        assert result.node_name is not None, result.message
        next(n for n in nodes if n.name == result.node_name).add_pod(p)
    per_zone = {z: sum(n.pod_count for n in nodes if n.labels[ZONE] == z) for z in "ABC"}
    assert sorted(per_zone.values()) == [3, 3, 4]
    full = [n for n in nodes if per_zone[n.labels[ZONE]] == 4]
    for n in full:  # the fuller zone rejects an 11th pod: 4 + 1 - 3 = 2
        assert PTS.filter(pod("p10", labels=FOO, spread=[constraint()]), n,
                          cluster=ClusterView(nodes)).reason == REASON
    # Held to the full zone by its nodeSelector, counting every zone (Ignore), it fits nowhere; with the
    # default Honor only its own zone would be a domain and it would fit.
    zone = full[0].labels[ZONE]
    tight = pod("tight", labels=FOO, spread=[constraint(nodeAffinityPolicy="Ignore")], node_selector={ZONE: zone})
    result = profile.schedule(tight, nodes, rng)
    assert result.message == ("0/6 nodes are available: 2 node(s) didn't match pod topology spread constraints, "
                              "4 node(s) didn't match Pod's node affinity/selector.")
    honored = pod("honored", labels=FOO, spread=[constraint()], node_selector={ZONE: zone})
    assert profile.schedule(honored, nodes, rng).node_name in {n.name for n in full}
