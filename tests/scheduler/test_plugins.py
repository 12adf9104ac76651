"""Table-driven tests for every plugin: verdicts with kube-scheduler's reason strings, and scores."""

from __future__ import annotations

import pytest

from scheduler.framework import Code
from scheduler.model import PodSpecError, Taint, Toleration
from scheduler.plugins import (
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from scheduler.plugins.node_resources_fit import NodeResourcesFitArgs
from tests.scheduler.builders import node, pod, required_affinity

CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


# --------------------------------------------------------------------------------------- tolerations


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("", "Exists"), Taint("anything", "v", "NoExecute"), True),  # empty key + Exists: all
        (Toleration("", "Exists", effect="NoSchedule"), Taint("k", "v", "NoExecute"), False),
        (Toleration("k", "Exists"), Taint("k", "whatever", "NoSchedule"), True),
        (Toleration("k", "Exists"), Taint("other", "", "NoSchedule"), False),
        (Toleration("k", value="v"), Taint("k", "v", "NoSchedule"), True),  # operator defaults to Equal
        (Toleration("k", value="v"), Taint("k", "w", "NoSchedule"), False),
        (Toleration("k", "Equal", ""), Taint("k", "", "NoSchedule"), True),
        (Toleration("k", "Equal", "v", effect=""), Taint("k", "v", "PreferNoSchedule"), True),  # empty effect
        (Toleration("k", "Equal", "v", effect="NoSchedule"), Taint("k", "v", "NoExecute"), False),
        (Toleration("k", "Exists", effect="NoExecute", toleration_seconds=30), Taint("k", "", "NoExecute"), True),
    ],
)
def test_toleration_matches_taint(toleration, taint, tolerated):
    assert toleration.tolerates(taint) is tolerated


@pytest.mark.parametrize(
    ("taints", "tolerations", "reason"),
    [
        ([], [], None),
        ([CONTROL_PLANE], [], "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
        ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], [],
         "node(s) had untolerated taint {dedicated: gpu}"),
        ([{"key": "k", "value": "v", "effect": "NoExecute"}], [], "node(s) had untolerated taint {k: v}"),
        ([{"key": "k", "value": "v", "effect": "PreferNoSchedule"}], [], None),  # only lowers the score
        ([CONTROL_PLANE], [{"operator": "Exists"}], None),
        ([CONTROL_PLANE], [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoSchedule"}], None),
        ([CONTROL_PLANE], [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoExecute"}],
         "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
        ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "value": "v"}], None),
        ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "operator": "Equal", "value": "x"}],
         "node(s) had untolerated taint {k: v}"),
        # several taints: the reason names the first one not tolerated
        ([{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "b", "value": "2", "effect": "NoSchedule"}],
         [{"key": "a", "operator": "Exists"}], "node(s) had untolerated taint {b: 2}"),
        # a not-ready node (condition only, no taint yet) is avoided like kube-scheduler's tainted one
        ("not-ready", [], "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"),
        ("not-ready", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], None),
    ],
)
def test_taint_toleration_filter(taints, tolerations, reason):
    if taints == "not-ready":
        n = node(conditions=[{"type": "Ready", "status": "False"}])
    else:
        n = node(taints=taints)
    status = taint_toleration.PLUGIN.filter(pod(tolerations=tolerations), n)
    if reason is None:
        assert status.ok
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,) and status.plugin == "TaintToleration"


def test_taint_toleration_score_prefers_fewer_untolerated_prefer_no_schedule_taints():
    soft = [{"key": f"soft{i}", "effect": "PreferNoSchedule"} for i in range(2)]
    nodes = [node("clean"), node("one", taints=soft[:1]), node("two", taints=soft),
             node("hard", taints=[{"key": "x", "effect": "NoSchedule"}])]
    assert taint_toleration.PLUGIN.score_nodes(pod(), nodes) == [100, 50, 0, 100]
    tolerant = pod(tolerations=[{"key": "soft0", "operator": "Exists"}])  # empty effect covers Prefer...
    assert taint_toleration.PLUGIN.score_nodes(tolerant, nodes) == [100, 100, 0, 100]
    assert taint_toleration.PLUGIN.score_nodes(pod(), [node("a"), node("b")]) == [100, 100]


# ------------------------------------------------------------------------------ unschedulable, name


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "ok"),
    [
        (False, [], True),
        (True, [], False),
        (True, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], True),
        (True, [{"operator": "Exists"}], True),
        (True, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], False),
    ],
)
def test_node_unschedulable(unschedulable, tolerations, ok):
    status = node_unschedulable.PLUGIN.filter(pod(tolerations=tolerations), node(unschedulable=unschedulable))
    assert status.ok is ok
    if not ok:
        assert status.reasons == ("node(s) were unschedulable",)


@pytest.mark.parametrize(("wanted", "ok"), [(None, True), ("n", True), ("other", False)])
def test_node_name(wanted, ok):
    status = node_name.PLUGIN.filter(pod(node_name=wanted), node("n"))
    assert status.ok is ok
    if not ok:
        assert status.reasons == ("node(s) didn't match the requested node name",)


# ----------------------------------------------------------------------------------- node affinity

LABELS = {"zone": "a", "disk": "ssd", "cores": "8", "gen": "v2", "empty": ""}


def expr(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, "values": list(values)} if values else {"key": key,
                                                                                       "operator": operator}


@pytest.mark.parametrize(
    ("node_selector", "terms", "fields", "ok"),
    [
        (None, None, None, True),
        ({"zone": "a"}, None, None, True),
        ({"zone": "b"}, None, None, False),
        ({"zone": "a", "disk": "hdd"}, None, None, False),
        ({"missing": ""}, None, None, False),
        ({"empty": ""}, None, None, True),
        # kubeadm's control-plane label has an empty value: "true" never matches it
        ({"node-role.kubernetes.io/control-plane": "true"}, None, None, False),
        (None, [[expr("zone", "In", "a", "b")]], None, True),
        (None, [[expr("zone", "In", "b", "c")]], None, False),
        (None, [[expr("zone", "NotIn", "b")]], None, True),
        (None, [[expr("zone", "NotIn", "a")]], None, False),
        (None, [[expr("missing", "NotIn", "a")]], None, True),  # NotIn matches an absent label
        (None, [[expr("disk", "Exists")]], None, True),
        (None, [[expr("missing", "Exists")]], None, False),
        (None, [[expr("missing", "DoesNotExist")]], None, True),
        (None, [[expr("disk", "DoesNotExist")]], None, False),
        (None, [[expr("cores", "Gt", "4")]], None, True),
        (None, [[expr("cores", "Gt", "8")]], None, False),
        (None, [[expr("cores", "Lt", "9")]], None, True),
        (None, [[expr("cores", "Lt", "-1")]], None, False),
        (None, [[expr("gen", "Gt", "1")]], None, False),  # "v2" is not an integer: no match, no error
        (None, [[expr("missing", "Lt", "100")]], None, False),
        (None, [[expr("zone", "In", "a"), expr("disk", "In", "hdd")]], None, False),  # AND within a term
        (None, [[expr("zone", "In", "b")], [expr("disk", "In", "ssd")]], None, True),  # OR across terms
        (None, [[]], None, False),  # an empty term selects nothing
        (None, None, [expr("metadata.name", "In", "n")], True),
        (None, None, [expr("metadata.name", "In", "other")], False),
        (None, None, [expr("metadata.name", "NotIn", "other")], True),
        ({"zone": "a"}, [[expr("disk", "In", "hdd")]], None, False),  # selector AND affinity
    ],
)
def test_node_affinity_filter(node_selector, terms, fields, ok):
    affinity = required_affinity(*(terms or []), fields=fields) if terms is not None or fields is not None else None
    status = node_affinity.PLUGIN.filter(pod(node_selector=node_selector, affinity=affinity),
                                         node("n", labels=LABELS))
    assert status.ok is ok
    if not ok:
        assert status.reasons == ("node(s) didn't match Pod's node affinity/selector",)
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_node_affinity_gt_with_non_integer_value_in_pod_is_a_spec_error():
    with pytest.raises(PodSpecError) as err:
        pod(affinity=required_affinity([expr("cores", "Gt", "four")]))
    assert err.value.field.endswith("matchExpressions[0].values")


def test_node_affinity_score_sums_preferred_weights():
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 80, "preference": {"matchExpressions": [expr("disk", "In", "ssd")]}},
        {"weight": 20, "preference": {"matchExpressions": [expr("zone", "In", "a")]}},
    ]}}
    p = pod(affinity=affinity)
    nodes = [node("both", labels={"disk": "ssd", "zone": "a"}), node("ssd", labels={"disk": "ssd"}),
             node("zone", labels={"zone": "a"}), node("none")]
    assert [node_affinity.PLUGIN.score(p, n) for n in nodes] == [100, 80, 20, 0]
    assert node_affinity.PLUGIN.score_nodes(p, nodes[1:]) == [100, 25, 0]
    assert node_affinity.PLUGIN.score_nodes(pod(), nodes) == [0, 0, 0, 0]


# --------------------------------------------------------------------------------------- node ports


def port_pod(name: str, *ports: tuple[str, str, int]):
    return pod(name, containers=[{"name": "c", "image": "x", "ports": [
        {"containerPort": p, "hostPort": p, "protocol": proto, "hostIP": ip} for proto, ip, p in ports]}])


@pytest.mark.parametrize(
    ("used", "wanted", "ok"),
    [
        ([], [("TCP", "", 80)], True),
        ([("TCP", "", 80)], [("TCP", "", 80)], False),
        ([("TCP", "", 80)], [("UDP", "", 80)], True),
        ([("TCP", "", 80)], [("TCP", "", 81)], True),
        ([("TCP", "10.0.0.1", 80)], [("TCP", "10.0.0.2", 80)], True),
        ([("TCP", "10.0.0.1", 80)], [("TCP", "10.0.0.1", 80)], False),
        ([("TCP", "10.0.0.1", 80)], [("TCP", "0.0.0.0", 80)], False),  # wildcard wanted
        ([("TCP", "0.0.0.0", 80)], [("TCP", "10.0.0.1", 80)], False),  # wildcard used
        ([("SCTP", "", 9)], [("TCP", "", 443), ("SCTP", "", 9)], False),
    ],
)
def test_node_ports(used, wanted, ok):
    n = node("n", pods_on_it=[port_pod("old", *used)] if used else [])
    status = node_ports.PLUGIN.filter(port_pod("new", *wanted), n)
    assert status.ok is ok
    if not ok:
        assert status.reasons == ("node(s) didn't have free ports for the requested pod ports",)
        assert status.code == Code.UNSCHEDULABLE


def test_node_ports_free_again_after_pod_leaves():
    old = port_pod("old", ("TCP", "", 80))
    n = node("n", pods_on_it=[old])
    assert not node_ports.PLUGIN.filter(port_pod("new", ("TCP", "", 80)), n).ok
    n.remove_pod(old)
    assert node_ports.PLUGIN.filter(port_pod("new", ("TCP", "", 80)), n).ok


# ----------------------------------------------------------------------------------- resources fit


def busy(cpu: str = "0", memory: str = "0", **extra: str):
    return pod("busy", requests={"cpu": cpu, "memory": memory, **extra})


@pytest.mark.parametrize(
    ("node_kwargs", "existing", "incoming", "reasons"),
    [
        ({"cpu": "2"}, busy("1"), {"requests": {"cpu": "1"}}, ()),
        ({"cpu": "2"}, busy("1500m"), {"requests": {"cpu": "600m"}}, ("Insufficient cpu",)),
        ({"memory": "1Gi"}, busy(memory="768Mi"), {"requests": {"memory": "512Mi"}}, ("Insufficient memory",)),
        ({"cpu": "1", "memory": "1Gi"}, None, {"requests": {"cpu": "2", "memory": "2Gi"}},
         ("Insufficient cpu", "Insufficient memory")),
        ({}, None, {"requests": {"ephemeral-storage": "30Gi"}}, ("Insufficient ephemeral-storage",)),
        ({}, None, {"requests": {"nvidia.com/gpu": "1"}}, ("Insufficient nvidia.com/gpu",)),
        ({"extra": {"nvidia.com/gpu": "2"}}, busy(**{"nvidia.com/gpu": "1"}), {"requests": {"nvidia.com/gpu": "1"}},
         ()),
        ({"extra": {"nvidia.com/gpu": "2"}}, busy(**{"nvidia.com/gpu": "2"}), {"requests": {"nvidia.com/gpu": "1"}},
         ("Insufficient nvidia.com/gpu",)),
        ({"pods": "1"}, busy(), {"requests": {}}, ("Too many pods",)),
        ({"pods": "1", "cpu": "1"}, busy(), {"requests": {"cpu": "2"}}, ("Too many pods", "Insufficient cpu")),
        # a pod that requests nothing fits a node whose cpu is all taken
        ({"cpu": "1"}, busy("1"), {"requests": {}}, ()),
        # init containers: the biggest one counts
        ({"cpu": "2"}, None, {"requests": {"cpu": "100m"},
                              "init_containers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]},
         ("Insufficient cpu",)),
        # overhead tips it over
        ({"cpu": "1"}, None, {"requests": {"cpu": "900m"}, "overhead": {"cpu": "200m"}}, ("Insufficient cpu",)),
    ],
)
def test_node_resources_fit_filter(node_kwargs, existing, incoming, reasons):
    n = node("n", pods_on_it=[existing] if existing else [], **node_kwargs)
    status = node_resources_fit.PLUGIN.filter(pod("p", **incoming), n)
    assert status.reasons == reasons
    assert status.ok is (not reasons)
    if reasons:
        assert status.code == Code.UNSCHEDULABLE and status.plugin == "NodeResourcesFit"


def test_node_resources_fit_ignored_resources():
    args = NodeResourcesFitArgs(ignoredResources=("example.com/widget",))
    p = pod(requests={"example.com/widget": "1"})
    assert not node_resources_fit.PLUGIN.filter(p, node()).ok
    assert node_resources_fit.PLUGIN.filter(p, node(), args).ok


def test_node_resources_fit_least_and_most_allocated_scores():
    # node: 4 cpu / 8Gi. existing pod 1 cpu / 2Gi; incoming 1 cpu / 2Gi -> 50% of each after placement
    n = node("n", cpu="4", memory="8Gi", pods_on_it=[busy("1", "2Gi")])
    p = pod(requests={"cpu": "1", "memory": "2Gi"})
    assert node_resources_fit.PLUGIN.score(p, n) == 50
    most = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type": "MostAllocated"}})
    assert node_resources_fit.PLUGIN.score(p, n, most) == 50
    # 3 cpu of 4 requested (75%) and 4Gi of 8Gi (50%): least = (25 + 50) / 2, most = (75 + 50) / 2
    p2 = pod(requests={"cpu": "2", "memory": "2Gi"})
    assert node_resources_fit.PLUGIN.score(p2, n) == 37
    assert node_resources_fit.PLUGIN.score(p2, n, most) == 62
    # a pod without requests is scored as 100m / 200Mi (kube-scheduler's non-zero defaults)
    empty = node("e", cpu="1", memory="1000Mi")
    assert node_resources_fit.PLUGIN.score(pod(), empty) == (90 + 80) // 2
    # weights and extra resources: cpu weight 3, memory 1, a resource the node lacks is skipped
    weighted = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"resources": [
        {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}]}})
    assert node_resources_fit.PLUGIN.score(p2, n, weighted) == (25 * 3 + 50) // 4
