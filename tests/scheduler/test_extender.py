"""The extender's protocol (scheduler.extender) against requests in kube-scheduler's wire format.

Nothing here is kube-scheduler: the requests are built as kube-scheduler builds them in
pkg/scheduler/extender.go (HTTPExtender.Filter / Prioritize -> send): Go's encoding/json of
k8s.io/kube-scheduler/extender/v1's ExtenderArgs, whose fields carry no JSON tags, so the keys are the Go
field names; a nil pointer is null, so the field kube-scheduler does not fill is sent as null; a NodeList
marshals as {"metadata": {}, "items": [...]} (ListMeta is a struct: omitempty cannot drop it).
The extender's cache is filled through the same informer callbacks the real informers call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.extender.service import UNKNOWN_NODE, Extender
from scheduler.framework import build_profiles
from scheduler.model import NodeInfo, PodInfo
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from scheduler.runtime.metrics import ExtenderMetrics
from tests import bundled_plugins
from tests.scheduler.builders import node_obj, pod_obj

NETWORK_REASON = ("node(s) didn't have label network-topology=high-speed requested by pod annotation "
                  "my-network-preference")
HIGH_SPEED = {"my-network-preference": "high-speed"}


def config(*, only_network_aware: bool = False) -> dict[str, Any]:
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "NetworkAware"}]}}
    if only_network_aware:
        plugins["multiPoint"]["disabled"] = [{"name": "*"}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "my-custom-scheduler", "plugins": plugins}]}


def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


NODES = {
    "fast": versioned(node_obj("fast", labels={"network-topology": "high-speed"}), "11"),
    "slow-1": versioned(node_obj("slow-1"), "12"),
    "slow-2": versioned(node_obj("slow-2", cpu="1"), "13"),
}


def make_extender(cfg: dict[str, Any] | None = None, *, bound: list[dict[str, Any]] = ()) -> Extender:
    cache = Cache()
    handlers = CacheHandlers(cache)
    for obj in NODES.values():
        handlers.node_changed(obj)
    for obj in bound:
        handlers.pod_changed(obj)
    return Extender(cache, build_profiles(parse_config(cfg or config(), "config", bundled_plugins.registry())),
                    ExtenderMetrics())


def args_body(pod: dict[str, Any], names: list[str], *, cache_capable: bool) -> bytes:
    """ExtenderArgs as kube-scheduler marshals it (field order of the Go struct: Pod, Nodes, NodeNames)."""
    if cache_capable:
        args = {"Pod": pod, "Nodes": None, "NodeNames": names}
    else:
        args = {"Pod": pod, "Nodes": {"metadata": {}, "items": [NODES[n] for n in names]}, "NodeNames": None}
    return json.dumps(args).encode()


def call(extender: Extender, verb: str, body: bytes) -> tuple[int, Any]:
    code, answer = extender.handle(f"/scheduler/{verb}", body)
    return code, json.loads(answer)


def test_filter_by_name_sends_unresolvable_nodes_with_the_plugin_reason():
    code, result = call(make_extender(), "filter",
                        args_body(pod_obj(annotations=HIGH_SPEED), ["fast", "slow-1", "slow-2"], cache_capable=True))
    assert code == 200
    assert result == {"Nodes": None, "NodeNames": ["fast"], "FailedNodes": {},
                      "FailedAndUnresolvableNodes": {"slow-1": NETWORK_REASON, "slow-2": NETWORK_REASON},
                      "Error": ""}


def test_filter_counts_the_pods_the_cache_holds_and_resolvable_failures_go_to_failed_nodes():
    # slow-1 has 4 cpu, 3 of them taken by a pod bound through the API: a 2-cpu pod fits only fast. slow-2
    # has 1 cpu, less than the pod asks for even empty: unresolvable, as kube-scheduler 1.34+ says.
    busy = pod_obj("busy", requests={"cpu": "3"}, node_name="slow-1")
    extender = make_extender(bound=[busy])
    want = {"FailedNodes": {"slow-1": "Insufficient cpu"},
            "FailedAndUnresolvableNodes": {"slow-2": "Insufficient cpu"}, "Error": ""}
    for cache_capable in (True, False):
        code, result = call(extender, "filter", args_body(pod_obj(requests={"cpu": "2"}),
                                                          ["fast", "slow-1", "slow-2"], cache_capable=cache_capable))
        assert code == 200
        assert {k: result[k] for k in want} == want
    assert result["Nodes"]["items"] == [NODES["fast"]] and result["NodeNames"] is None  # objects mode


def test_filter_with_node_objects_answers_node_objects_and_reads_the_objects_given():
    # kube-scheduler's view of slow-1 is newer than the cache's: it now carries the label the pod wants.
    newer = versioned(node_obj("slow-1", labels={"network-topology": "high-speed"}), "20")
    body = json.dumps({"Pod": pod_obj(annotations=HIGH_SPEED),
                       "Nodes": {"metadata": {}, "items": [NODES["fast"], newer, NODES["slow-2"]]},
                       "NodeNames": None}).encode()
    code, result = call(make_extender(), "filter", body)
    assert code == 200
    assert result["Nodes"] == {"metadata": {}, "items": [NODES["fast"], newer]}
    assert result["NodeNames"] is None
    assert result["FailedAndUnresolvableNodes"] == {"slow-2": NETWORK_REASON}


def test_field_names_are_matched_as_go_matches_them_ignoring_case():
    # kube-scheduler before extender/v1 tagged the fields "pod", "nodes", "nodenames"; Go decodes either.
    body = json.dumps({"pod": pod_obj(annotations=HIGH_SPEED), "nodes": None, "nodenames": ["fast", "slow-1"]})
    code, result = call(make_extender(), "filter", body.encode())
    assert code == 200
    assert result["NodeNames"] == ["fast"]


def test_unknown_node_name_is_unresolvable_for_filter_and_scores_zero():
    extender = make_extender(config(only_network_aware=True))
    body = args_body(pod_obj(annotations=HIGH_SPEED), ["ghost", "fast"], cache_capable=True)
    code, result = call(extender, "filter", body)
    assert code == 200
    assert result["NodeNames"] == ["fast"]
    assert result["FailedAndUnresolvableNodes"] == {"ghost": UNKNOWN_NODE}
    code, scores = call(extender, "prioritize", body)
    assert code == 200
    assert scores == [{"Host": "ghost", "Score": 0}, {"Host": "fast", "Score": 10}]


@pytest.mark.parametrize("cache_capable", [True, False])
def test_prioritize_is_the_standalone_total_rescaled_to_0_10(cache_capable):
    extender = make_extender(config(only_network_aware=True))
    body = args_body(pod_obj(annotations=HIGH_SPEED), ["slow-1", "fast", "slow-2"], cache_capable=cache_capable)
    code, scores = call(extender, "prioritize", body)
    assert code == 200
    assert scores == [{"Host": "slow-1", "Score": 0}, {"Host": "fast", "Score": 10},
                      {"Host": "slow-2", "Score": 0}]


def test_prioritize_with_default_plugins_keeps_the_standalone_order_within_0_10():
    # Defaults + NetworkAware: TaintToleration x3 (300 everywhere), NodeAffinity x2 (0), NodeResourcesFit
    # (least allocated: slow-2 has 1 cpu, the others 4), NodeResourcesBalancedAllocation (75, 75, 65 on
    # slow-2: 1.36 scores the change in balance), PodTopologySpread, InterPodAffinity and ImageLocality (0: no constraint, no affinity, no image
    # held) and NetworkAware (100 on fast only).
    extender = make_extender()
    profile = extender.profiles["my-custom-scheduler"]
    pod = pod_obj(annotations=HIGH_SPEED, requests={"cpu": "500m", "memory": "1Gi"})
    totals, _ = profile.score_nodes(PodInfo.from_api(pod), [NodeInfo.from_api(NODES[n]) for n in NODES])
    code, scores = call(extender, "prioritize", args_body(pod, list(NODES), cache_capable=True))
    assert code == 200
    got = {s["Host"]: s["Score"] for s in scores}
    assert got == {name: 10 * total // max(totals) for name, total in zip(NODES, totals, strict=True)}
    assert totals == [562, 462, 433]
    # The best total gets 10, the others 10 x total / best rounded down (8.3 and 7.6): eleven levels are the
    # extender's resolution.
    assert got == {"fast": 10, "slow-1": 8, "slow-2": 7}


def test_malformed_requests_get_400_with_the_reason_and_the_extender_keeps_answering():
    extender = make_extender()
    cases = {
        b"{not json": "the body is not JSON",
        b"[]": "expected an ExtenderArgs object",
        json.dumps({"Pod": pod_obj(), "Nodes": None, "NodeNames": None}).encode(): "neither NodeNames",
        json.dumps({"Pod": pod_obj(), "Nodes": None, "NodeNames": "fast"}).encode(): "NodeNames: expected a list",
        json.dumps({"Pod": None, "Nodes": None, "NodeNames": ["fast"]}).encode(): "Pod: expected the pod",
        json.dumps({"Pod": pod_obj(), "Nodes": {"metadata": {}, "items": [{"metadata": {}}]},
                    "NodeNames": None}).encode(): "Nodes.items[0]: expected a core/v1 Node object",
        json.dumps({"Pod": pod_obj(), "Nodes": {"metadata": {}, "items": [
            {"metadata": {"name": "odd", "labels": ["not", "a", "map"]}}]},
                    "NodeNames": None}).encode(): "Nodes.items[0] (odd): not a readable core/v1 Node",
    }
    for body, reason in cases.items():
        for verb in ("filter", "prioritize"):
            code, answer = call(extender, verb, body)
            assert code == 400, body
            assert answer["Error"].startswith(f"malformed {verb} request: ") and reason in answer["Error"]
    code, result = call(extender, "filter", args_body(pod_obj(), ["fast"], cache_capable=True))
    assert (code, result["NodeNames"]) == (200, ["fast"])


def test_pod_our_plugins_cannot_read_fails_filter_with_error_and_prioritize_with_400():
    extender = make_extender()
    body = args_body(pod_obj(annotations={"my-network-preference": "very fast!"}), ["fast"], cache_capable=True)
    code, result = call(extender, "filter", body)
    assert code == 200
    assert result["Error"] == ("invalid pod spec: metadata.annotations[my-network-preference]: 'very fast!' is "
                               "not a valid network preference; use 'high-speed' or remove the annotation")
    code, answer = call(extender, "prioritize", body)
    assert code == 400 and answer["Error"] == result["Error"]


def test_unknown_verb_is_404_and_not_synced_is_503():
    extender = make_extender()
    code, answer = call(extender, "bind", b"{}")
    assert code == 404 and "filter and prioritize" in answer["Error"]
    extender.synced = lambda: False
    code, answer = call(extender, "filter", args_body(pod_obj(), ["fast"], cache_capable=True))
    assert code == 503 and "not synced" in answer["Error"]


def test_requests_are_counted_per_verb_and_status():
    extender = make_extender()
    call(extender, "filter", args_body(pod_obj(), ["fast"], cache_capable=True))
    call(extender, "prioritize", b"{")
    registry = extender.metrics.registry
    assert registry.get_sample_value("scheduler_extender_requests_total", {"verb": "filter", "code": "200"}) == 1
    assert registry.get_sample_value("scheduler_extender_requests_total",
                                     {"verb": "prioritize", "code": "400"}) == 1
    assert registry.get_sample_value("scheduler_extender_request_duration_seconds_count",
                                     {"verb": "filter"}) == 1


def test_inter_pod_affinity_reads_the_whole_cache_and_namespace_labels():
    """kube-scheduler sends only the nodes it evaluates; anti-affinity still counts the pods on every cached
    node, in the namespaces whose labels (from the namespace informer) the term selects: z1b, sent alone
    with z2a, is ruled out by a matching pod on z1a, which was not sent."""
    zone = "topology.kubernetes.io/zone"
    cache = Cache()
    handlers = CacheHandlers(cache)
    for name, value in (("z1a", "z1"), ("z1b", "z1"), ("z2a", "z2")):
        handlers.node_changed(node_obj(name, labels={zone: value}))
    handlers.namespace_changed({"metadata": {"name": "team", "labels": {"tier": "prod"}}})
    handlers.pod_changed(pod_obj("web-0", namespace="team", labels={"app": "web"}, node_name="z1a"))
    extender = Extender(cache, build_profiles(parse_config(config(), "config", bundled_plugins.registry())),
                        ExtenderMetrics())
    replica = pod_obj("web-1", labels={"app": "web"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "web"}},
            "namespaceSelector": {"matchLabels": {"tier": "prod"}}, "topologyKey": zone}]}})
    code, result = call(extender, "filter", args_body(replica, ["z1b", "z2a"], cache_capable=True))
    assert code == 200
    assert result["NodeNames"] == ["z2a"]
    assert result["FailedNodes"] == {"z1b": "node(s) didn't match pod anti-affinity rules"}



def test_filter_with_node_objects_rejects_a_node_cordoned_or_tainted_in_the_objects_given():
    # The cache has no cordoned or tainted node, the objects kube-scheduler sends do: NodeUnschedulable and
    # TaintToleration must not skip their checks by the cache's nodes.
    cordoned = versioned(node_obj("slow-1", unschedulable=True), "20")
    tainted = versioned(node_obj("slow-2", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
                        "21")
    body = json.dumps({"Pod": pod_obj(), "Nodes": {"metadata": {}, "items": [NODES["fast"], cordoned, tainted]},
                       "NodeNames": None}).encode()
    code, result = call(make_extender(), "filter", body)
    assert code == 200
    assert result["FailedAndUnresolvableNodes"] == {"slow-1": "node(s) were unschedulable",
                                                    "slow-2": "node(s) had untolerated taint(s)"}


def test_pod_is_read_once_for_filter_and_prioritize_of_one_version(monkeypatch: pytest.MonkeyPatch):
    """kube-scheduler sends the same pod to both verbs: its PodInfo is prepared once per (uid,
    resourceVersion); a new version of the pod is read afresh, so a changed spec is never answered stale."""
    reads: list[str] = []
    real = PodInfo.from_api

    def counting(obj: dict[str, Any], policy: Any = None) -> PodInfo:
        reads.append(obj["metadata"]["resourceVersion"])
        return real(obj, policy) if policy is not None else real(obj)

    monkeypatch.setattr(PodInfo, "from_api", staticmethod(counting))
    extender = make_extender()
    pod = versioned(pod_obj(annotations=HIGH_SPEED), "5")
    names = ["fast", "slow-1", "slow-2"]
    assert call(extender, "filter", args_body(pod, names, cache_capable=True))[1]["NodeNames"] == ["fast"]
    assert call(extender, "prioritize", args_body(pod, names, cache_capable=True))[0] == 200
    assert reads == ["5"]
    changed = versioned(pod_obj(), "6")  # the annotation gone: every node passes now
    changed["metadata"]["uid"] = pod["metadata"]["uid"]
    assert call(extender, "filter", args_body(changed, names, cache_capable=True))[1]["NodeNames"] == names
    assert reads == ["5", "6"]


def test_nodes_decided_on_are_counted_for_traits_only_when_a_plugin_reads_them(monkeypatch: pytest.MonkeyPatch):
    """kube-scheduler sends a sample of the nodes (numFeasibleNodesToFind): how many of them are cordoned,
    tainted or list images is counted on first read, by the plugins that skip a pass by it, not per request.
    With them enabled, the count is of the nodes sent: a cordoned node among them is still rejected."""
    from scheduler.model import NodeTraits

    counted: list[int] = []
    real = NodeTraits.of.__func__

    def counting(cls: type, nodes: Any) -> NodeTraits:
        nodes = list(nodes)
        counted.append(len(nodes))
        return real(cls, nodes)

    monkeypatch.setattr(NodeTraits, "of", classmethod(counting))
    names = ["fast", "slow-1"]  # a sample: not every node of the cache
    extender = make_extender(config(only_network_aware=True))
    for verb in ("filter", "prioritize"):
        assert call(extender, verb, args_body(pod_obj(), names, cache_capable=True))[0] == 200
    assert counted == []
    cordoned = versioned(node_obj("slow-1"), "20")
    cordoned["spec"]["unschedulable"] = True
    extender = make_extender()
    CacheHandlers(extender.cache).node_changed(cordoned)
    code, result = call(extender, "filter", args_body(pod_obj(), names, cache_capable=True))
    assert code == 200 and result["NodeNames"] == ["fast"] and "slow-1" in result["FailedAndUnresolvableNodes"]
    assert counted == [2]
