"""Per-node explanations (labkit.placement.explain) with the scheduler's own plugins and the config
deploy-scheduler renders from the lab: pure, no cluster (objects built as the API sends them)."""

from __future__ import annotations

import random

import yaml

from kubeapi_testserver.objects import make_node, make_pod
from labkit.placement.explain import SchedulerConfig, StorageObjects, cluster_view, explain_pod
from labkit.placement.explain_view import abbreviations
from labkit.scheduler_deploy.manifests import render_config
from scheduler.config import parse_config
from scheduler.framework import ClusterView, build_profiles
from scheduler.model import PodInfo
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from tests import bundled_plugins
from tests.placement.standins import CONTROL_PLANE_TAINT, make_lab
from tests.scheduler.builders import claim_obj, claim_volume, on_node, pv_obj, storage_class_obj

SCHEDULER = "my-custom-scheduler"


def lab_config() -> SchedulerConfig:
    return SchedulerConfig(parse_config(yaml.safe_load(render_config(make_lab())), "rendered",
                                        bundled_plugins.registry()), "rendered")


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
    why = explain_pod(pod, cluster_view(nodes, pods, []), config.profile(SCHEDULER), config.source)
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
    why = explain_pod(plain, cluster_view(nodes, pods, []), config.profile(SCHEDULER), config.source)
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
    why = explain_pod(pod, cluster_view(nodes, pods, []), config.profile(SCHEDULER), config.source)
    assert why.message.startswith("0/3 nodes are available: 1 node(s) had untolerated taint")
    assert why.would_choose == [] and not any(n.fits for n in why.nodes)


def test_a_pod_the_scheduler_cannot_read_is_explained_not_raised():
    nodes, pods = cluster()
    config = lab_config()
    pod = make_pod("bad", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "not a value"})
    why = explain_pod(pod, cluster_view(nodes, pods, []), config.profile(SCHEDULER), config.source)
    assert why.message.startswith("the scheduler cannot read this pod")


def test_an_annotation_value_the_scheduler_does_not_act_on_leaves_every_node_feasible():
    """The explainer knows no plugin: what a plugin does with an annotation shows in its verdicts only."""
    nodes, pods = cluster()
    config = lab_config()
    pod = make_pod("uf", "ns", scheduler_name=SCHEDULER, annotations={"my-network-preference": "ultra-fast"})
    why = explain_pod(pod, cluster_view(nodes, pods, []), config.profile(SCHEDULER), config.source)
    assert why.notes == []
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
    why = explain_pod(replica, cluster_view(nodes, [*pods, web], []), config.profile(SCHEDULER), config.source)
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
    why = explain_pod(pod, cluster_view(nodes, [*pods, web], []), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert by_node["a"].reasons == ["PodTopologySpread: node(s) didn't match pod topology spread constraints"]
    assert by_node["cp"].reasons[-1] == ("PodTopologySpread: node(s) didn't match pod topology spread "
                                         "constraints (missing required label)")
    assert why.would_choose == ["b"]


def test_a_namespace_selector_reads_the_namespaces_labels():
    """A required pod affinity term whose namespaceSelector picks namespaces by label: the explainer has each
    namespace's labels, as the scheduler's namespace informer gives them, so only b (holding the db pod of
    a team=data namespace) fits."""
    nodes, pods = cluster()
    db = make_pod("db-0", "data", node_name="b", cpu="10m", labels={"app": "db"})
    db["metadata"]["uid"] = "db-0"
    namespaces = [{"metadata": {"name": "data", "labels": {"team": "data"}}}, {"metadata": {"name": "ns"}}]
    client = make_pod("client", "ns", scheduler_name=SCHEDULER)
    client["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "data"}},
         "topologyKey": "kubernetes.io/hostname"}]}}
    config = lab_config()
    why = explain_pod(client, cluster_view(nodes, [*pods, db], namespaces), config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert by_node["a"].reasons == ["InterPodAffinity: node(s) didn't match pod affinity rules"]
    assert by_node["b"].fits
    assert why.chosen == "b" and why.message == "would choose b"


def test_raw_normalised_and_weighted_scores_add_up_to_the_total():
    nodes, pods = cluster(extra_on_a=1)
    config = lab_config()
    why = explain_pod(make_pod("plain", "ns", scheduler_name=SCHEDULER), cluster_view(nodes, pods, []),
                      config.profile(SCHEDULER), config.source)
    a = next(n for n in why.nodes if n.node == "a")
    assert (a.raw_scores["LeastLoaded"], a.normalized_scores["LeastLoaded"], a.scores["LeastLoaded"]) == (1, 0, 0)
    assert a.normalized_scores["TaintToleration"] == 100 and why.weights["TaintToleration"] == 3
    assert a.scores == {p: a.normalized_scores[p] * w for p, w in why.weights.items()}
    assert a.total == sum(a.scores.values())
    assert [n.node for n in why.nodes] == ["b", "a", "cp"]  # chosen, the other feasible node, the miss


def test_a_bound_pod_is_explained_without_its_own_requests():
    """Counted on a (1 CPU), the 800m pod would not fit there; explained as unbound it does, and a, emptier
    than b, is the node chosen now."""
    nodes, _ = cluster()
    nodes[1]["status"]["allocatable"]["cpu"] = "1"
    placed = make_pod("big", "ns", scheduler_name=SCHEDULER, node_name="a", cpu="800m")
    busy = make_pod("busy", "ns", node_name="b", cpu="10m")
    for pod in (placed, busy):
        pod["metadata"]["uid"] = pod["metadata"]["name"]
    config = lab_config()
    why = explain_pod(placed, cluster_view(nodes, [placed, busy], [], skip_uid="big"), config.profile(SCHEDULER),
                      config.source)
    a = next(n for n in why.nodes if n.node == "a")
    assert a.fits and a.pods == 0
    assert (why.bound_to, why.chosen) == ("a", "a")
    assert why.message == "would choose a; bound to a, a node it would choose now"
    placed["spec"]["nodeName"] = "b"
    why = explain_pod(placed, cluster_view(nodes, [busy], []), config.profile(SCHEDULER), config.source)
    assert why.message == "would choose a; bound to b, not the node it would choose now"


def _random_cluster(rng: random.Random):
    """Nodes in two zones, some tainted or labelled, pods of two apps in namespaces with and without labels."""
    zone = "topology.kubernetes.io/zone"
    nodes = []
    for i in range(rng.randint(3, 8)):
        labels = {zone: f"z{i % 2}"}
        if rng.random() < 0.3:
            labels["network-topology"] = "high-speed"
        taints = [CONTROL_PLANE_TAINT] if rng.random() < 0.15 else None
        node = make_node(f"n{i}", cpu=rng.choice(["1", "2", "4"]), labels=labels, taints=taints)
        nodes.append(node)
    namespaces = [{"metadata": {"name": "data", "labels": {"team": "data"}}}, {"metadata": {"name": "ns"}}]
    pods = []
    for i in range(rng.randint(0, 12)):
        pod = make_pod(f"p{i}", rng.choice(["data", "ns"]), node_name=rng.choice(nodes)["metadata"]["name"],
                       cpu=rng.choice(["100m", "300m"]), labels={"app": rng.choice(["web", "db"])})
        pod["metadata"]["uid"] = f"p{i}"
        pods.append(pod)
    return nodes, pods, namespaces


def _incoming(rng: random.Random) -> dict:
    pod = make_pod("incoming", "ns", scheduler_name=SCHEDULER, cpu=rng.choice(["100m", "900m"]),
                   labels={"app": "web"})
    terms = {"labelSelector": {"matchLabels": {"app": rng.choice(["web", "db"])}},
             "namespaceSelector": {"matchLabels": {"team": "data"}}, "topologyKey": "kubernetes.io/hostname"}
    kind = rng.choice(["podAffinity", "podAntiAffinity", None])
    if kind:
        pod["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [terms]}}
    if rng.random() < 0.5:
        pod["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}}}]
    return pod


def test_the_explainer_chooses_what_the_scheduler_decides_on_the_same_state_and_seed():
    """The scheduler's side as schedule_one runs it: its cache filled by its informer handlers (here pods
    before their nodes, and namespaces last), a snapshot, Profile.schedule with the same seed."""
    config = lab_config()
    for case in range(60):
        rng = random.Random(case)
        nodes, pods, namespaces = _random_cluster(rng)
        pod = _incoming(rng)
        cache = Cache()
        handlers = CacheHandlers(cache)
        for obj in pods:
            handlers.pod_changed(obj)
        for obj in nodes:
            handlers.node_changed(obj)
        for obj in namespaces:
            handlers.namespace_changed(obj)
        snap = cache.snapshot()
        decided = build_profiles(config.config)[SCHEDULER].schedule(
            PodInfo.from_api(pod), snap.nodes, random.Random(case),
            ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index))
        why = explain_pod(pod, cluster_view(nodes, pods, namespaces), config.profile(SCHEDULER), config.source,
                          seed=case)
        assert why.chosen == decided.node_name, (case, why.message, decided.message)
        assert {n.node for n in why.nodes if n.fits} == set(decided.feasible_nodes), case
        for node, status in decided.failures.items():
            verdict = next(n for n in why.nodes if n.node == node)
            assert {f"{status.plugin}: {r}" for r in status.reasons} <= set(verdict.reasons), (case, node)
        for node, total in zip(decided.feasible_nodes, decided.totals, strict=False):
            assert next(n for n in why.nodes if n.node == node).total == total, (case, node)
        if decided.node_name is None:
            assert why.message == decided.message


def test_plugin_columns_are_abbreviated_without_clashes():
    assert abbreviations(["TaintToleration", "NodeAffinity", "NetworkAware", "LeastLoaded"]) == {
        "TaintToleration": "TT", "NodeAffinity": "NoAf", "NetworkAware": "NeAw", "LeastLoaded": "LL"}


def test_a_claim_bound_to_a_local_volume_is_judged_by_the_volumes_node_affinity():
    """The explainer has the claims, PVs and StorageClasses the scheduler's volume informers give it: a pod
    whose claim is bound to a PV pinned to b fits only b, with VolumeBinding's reason on a. List items carry
    no kind, so the objects go in as the API lists them."""
    nodes, pods = cluster()
    claim = claim_obj("data", namespace="ns", volume_name="pv-b", bound=True, storage_class="local")
    volume = pv_obj("pv-b", node_terms=on_node("b"))
    storage_class = storage_class_obj("local", "WaitForFirstConsumer")
    listed = [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
              for obj in (claim, volume, storage_class)]
    pod = make_pod("writer", "ns", scheduler_name=SCHEDULER)
    pod["spec"]["volumes"] = [claim_volume("data")]
    config = lab_config()
    view = cluster_view(nodes, pods, [], storage=StorageObjects([listed[0]], [listed[1]], [listed[2]]))
    why = explain_pod(pod, view, config.profile(SCHEDULER), config.source)
    by_node = {n.node: n for n in why.nodes}
    assert by_node["a"].reasons == ["VolumeBinding: node(s) had volume node affinity conflict"]
    assert by_node["b"].fits
    assert why.chosen == "b"


def test_a_plugin_the_lab_ships_is_explained_by_the_same_code(tmp_path):
    """A user's plugin folder named in scheduler.plugins (not one kubelab knows): its verdicts and scores are
    shown like every registered plugin's, through the lab's registry."""
    from labdef.lab import parse_lab
    from labkit import lab_plugins
    from labkit.placement.explain import rendered_config
    from tests import user_plugin
    from tests.placement.standins import lab_data

    folder = user_plugin.write_plugin(tmp_path / "disk_type")
    data = lab_data()
    data["scheduler"].update(plugins=[str(folder)], profile=user_plugin.profile())
    lab = parse_lab(data, "test lab")
    config = rendered_config(lab, lab_plugins.registry(lab))
    nodes = [make_node("a", labels={"example.com/disk": "ssd"}), make_node("b", labels={"example.com/disk": "hdd"})]
    pod = make_pod("p", "ns", scheduler_name=SCHEDULER, annotations={"example.com/disk": "ssd"})
    why = explain_pod(pod, cluster_view(nodes, [], []), config.profile(SCHEDULER), config.source)
    by_node = {v.node: v for v in why.nodes}
    assert by_node["b"].reasons == [f"{user_plugin.NAME}: {user_plugin.REASON}"]
    assert by_node["a"].fits and by_node["a"].raw_scores[user_plugin.NAME] == 100
    assert by_node["a"].scores[user_plugin.NAME] == 200  # weight 2 from the lab's profile
    assert why.weights[user_plugin.NAME] == 2 and why.chosen == "a"
