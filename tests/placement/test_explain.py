"""Per-node explanations (labkit.placement.explain) with the scheduler's own plugins and the config
deploy-scheduler renders from the lab: pure, no cluster (objects built as the API sends them)."""

from __future__ import annotations

import yaml

from labkit.placement.explain import SchedulerConfig, explain_pod, snapshot
from labkit.scheduler_deploy.manifests import render_config
from scheduler.config import parse_config
from tests.kubeapi.objects import make_node, make_pod
from tests.placement.standins import CONTROL_PLANE_TAINT, make_lab

SCHEDULER = "my-custom-scheduler"


def lab_config() -> SchedulerConfig:
    return SchedulerConfig(parse_config(yaml.safe_load(render_config(make_lab()))), "rendered")


def cluster(extra_on_a: int = 0):
    nodes = [make_node("cp", labels={"node-role.kubernetes.io/control-plane": ""}, taints=[CONTROL_PLANE_TAINT]),
             make_node("a", labels={"network-topology": "high-speed"}), make_node("b")]
    for node in nodes:
        node["metadata"]["uid"] = node["metadata"]["name"]
    pods = []
    for i in range(extra_on_a):
        p = make_pod(f"busy-{i}", node_name="a", cpu="10m")
        p["metadata"]["uid"] = f"u{i}"
        pods.append(p)
    return nodes, pods


def test_every_failing_filter_is_listed_per_node():
    nodes, pods = cluster()
    pod = make_pod("hs", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "high-speed"})
    config = lab_config()
    why = explain_pod(pod, snapshot(nodes, pods), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert [r.split(":")[0] for r in by_node["cp"].reasons] == ["TaintToleration", "NetworkAware"]
    assert by_node["b"].reasons == [
        ("NetworkAware: node(s) didn't have label network-topology=high-speed requested by pod annotation "
        "my-network-preference")]
    assert by_node["a"].fits and by_node["a"].total is not None
    assert why.would_choose == ["a"] and why.message == "would choose a"


def test_scores_are_weighted_and_count_pods_already_there():
    nodes, pods = cluster(extra_on_a=2)
    config = lab_config()
    plain = make_pod("plain", "ns", scheduler_name=SCHEDULER)
    why = explain_pod(plain, snapshot(nodes, pods), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert (by_node["a"].pods, by_node["b"].pods) == (2, 0)
    assert by_node["b"].scores["LeastLoaded"] == 100 and by_node["a"].scores["LeastLoaded"] == 0
    assert by_node["a"].scores["TaintToleration"] == 300  # weight 3 x 100
    assert why.would_choose == ["b"]


def test_no_node_fits_gives_the_schedulers_message():
    nodes, pods = cluster()
    nodes[1]["metadata"]["labels"].pop("network-topology")
    config = lab_config()
    pod = make_pod("hs", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "high-speed"})
    why = explain_pod(pod, snapshot(nodes, pods), config.profile(SCHEDULER), config.source)
    assert why.message.startswith("0/3 nodes are available: 1 node(s) had untolerated taint")
    assert why.would_choose == [] and not any(n.fits for n in why.nodes)


def test_a_pod_the_scheduler_cannot_read_is_explained_not_raised():
    nodes, pods = cluster()
    config = lab_config()
    pod = make_pod("bad", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "not a value"})
    why = explain_pod(pod, snapshot(nodes, pods), config.profile(SCHEDULER), config.source)
    assert why.message.startswith("the scheduler cannot read this pod")


def test_an_annotation_value_the_scheduler_does_not_act_on_is_noted():
    nodes, pods = cluster()
    config = lab_config()
    pod = make_pod("uf", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "ultra-fast"})
    why = explain_pod(pod, snapshot(nodes, pods), config.profile(SCHEDULER), config.source)
    assert why.notes == [("NetworkAware ignores this pod: its annotation my-network-preference=ultra-fast is not "
                          "the scheduler's labelValue 'high-speed', so any node may take it")]
    assert {n.node for n in why.nodes if n.fits} == {"a", "b"}


def test_inter_pod_affinity_is_judged_against_the_whole_cluster():
    """A node is explained with the pods on every node in view: anti-affinity across a zone rules out the
    empty node sharing the zone of the node holding the other replica."""
    zone = "topology.kubernetes.io/zone"
    nodes, pods = cluster()
    nodes[1]["metadata"]["labels"][zone] = nodes[2]["metadata"]["labels"][zone] = "z1"
    web = make_pod("web-0", "ns", node_name="a", cpu="10m", labels={"app": "web"})
    web["metadata"]["uid"] = "web-0"
    replica = make_pod("web-1", "ns", scheduler_name=SCHEDULER, labels={"app": "web"})
    replica["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": zone}]}}
    config = lab_config()
    why = explain_pod(replica, snapshot(nodes, [*pods, web]), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert by_node["b"].reasons == ["InterPodAffinity: node(s) didn't match pod anti-affinity rules"]


def test_topology_spread_is_explained_against_the_whole_cluster():
    """PodTopologySpread counts pods over every node, so each node's verdict comes from the cluster: zone z1
    (node a) already holds a matching pod and zone z2 (node b) none, so with maxSkew 1 only b fits."""
    nodes, pods = cluster()
    for node, zone in ((nodes[1], "z1"), (nodes[2], "z2")):
        node["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
    web = make_pod("web-0", node_name="a", labels={"app": "web"})
    web["metadata"]["uid"] = "web-0"
    pod = make_pod("web-1", "default", scheduler_name=SCHEDULER, labels={"app": "web"})
    pod["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}]
    config = lab_config()
    why = explain_pod(pod, snapshot(nodes, [*pods, web]), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert by_node["a"].reasons == ["PodTopologySpread: node(s) didn't match pod topology spread constraints"]
    assert by_node["cp"].reasons[-1] == ("PodTopologySpread: node(s) didn't match pod topology spread "
                                         "constraints (missing required label)")
    assert why.would_choose == ["b"]
