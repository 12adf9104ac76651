"""scheduler.testing, what plugin authors get: builders for PodInfo, NodeInfo and ClusterView from dicts or
YAML, and the contract checks, which the bundled plugins pass and which catch each kind of broken plugin."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from scheduler.framework import Args, ClusterEvent, Plugin
from scheduler.model import PodSpecError
from scheduler.testing import check_plugin, cluster_from_yaml, cluster_view, node_info, pod_info
from scheduler.testing.contract import args_problems, batch_form_problems, requeue_problems
from tests import bundled_plugins

REGISTRY = bundled_plugins.registry()  # the in-tree plugins and the two bundled examples

CLUSTER = """
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: web}}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {topology.kubernetes.io/zone: z1}
  annotations: {example.com/rack: r1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: shop, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: waiting, namespace: shop, annotations: {example.com/want-rack: r1}}
spec: {runtimeClassName: gvisor, containers: [{name: c, image: nginx}]}
"""


def test_cluster_from_yaml_counts_bound_pods_and_lists_pending_ones():
    cluster = cluster_from_yaml(CLUSTER)
    assert [n.name for n in cluster.nodes] == ["n1", "n2"]
    n1 = cluster.node("n1")
    assert n1.requested.milli_cpu == 1000 and n1.allocatable.milli_cpu == 2000
    assert n1.raw["metadata"]["annotations"]["example.com/rack"] == "r1"
    assert cluster.node("n2").taints[0].key == "dedicated"
    waiting = cluster.pod("waiting")
    assert waiting.raw["spec"]["runtimeClassName"] == "gvisor"
    view = cluster.view()
    assert view.labels_of_namespace("shop") == {"team": "web"}
    assert [p.name for _, p in view.pods()] == ["running"]
    # The bundled plugins decide on these as the scheduler would: the taint keeps the pod off n2.
    taints = REGISTRY["TaintToleration"]
    assert taints.filter(waiting, n1, cluster=view).ok and not taints.filter(waiting, cluster.node("n2")).ok


def test_builders_from_keywords_and_yaml():
    p = pod_info("metadata: {name: a, labels: {x: '1'}}\nspec: {priority: 5}", labels={"y": "2"},
                 requests={"cpu": "250m"})
    assert (p.name, p.namespace, p.labels, p.priority, p.requests.milli_cpu) == ("a", "default", {"x": "1", "y": "2"},
                                                                                   5, 250)
    n = node_info(name="n", labels={"disk": "ssd"}, pods=[pod_info(name="b", requests={"cpu": "1"}),
                                                         {"metadata": {"name": "c"}}])
    assert n.labels == {"kubernetes.io/hostname": "n", "disk": "ssd"} and n.pod_count == 2
    assert len(cluster_view([n]).nodes) == 1
    with pytest.raises(PodSpecError, match="spec.containers\\[0\\].resources.requests.cpu"):
        pod_info(requests={"cpu": "lots"})  # parsed as a pod about to be scheduled: refused, field named
    with pytest.raises(ValueError, match="Document 1|document 1"):
        cluster_from_yaml("kind: Deployment\n")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_bundled_plugin_keeps_the_requeue_and_args_rules(name):
    assert requeue_problems(REGISTRY[name]) + args_problems(REGISTRY[name]) == []


def _off_by_one(batch):
    def score_batch(state: Any, nodes: list) -> list[int]:
        scores = batch(state, nodes)
        return [s + 1 if i == len(scores) - 1 else s for i, s in enumerate(scores)]
    return score_batch


def test_a_batch_form_that_differs_is_caught_naming_the_node():
    fit = REGISTRY["NodeResourcesFit"]
    broken = dataclasses.replace(fit, score_batch=_off_by_one(fit.score_batch))
    problems = batch_form_problems(broken, seeds=range(2), nodes=10)
    assert problems and problems[0].rule == "batch-forms"
    assert "score_batch gives" in problems[0].detail and "where score_node gives" in problems[0].detail
    assert str(problems[0]).startswith("NodeResourcesFit: batch-forms: ")


def test_a_wrong_requeue_field_is_caught_with_a_suggestion():
    plugin = Plugin("Rack", pre_filter=lambda pod, args: None, requeue_on=ClusterEvent.NODE_LABELS_CHANGED,
                    requeue_on_fields=("node.spec.taint", "pod.metadata.annotations['a'].b", "node.status"))
    details = [p.detail for p in requeue_problems(plugin)]
    assert any("lacks NODE_ADDED" in d for d in details)
    assert any("'taint' is not a field of a Node's spec" in d and "taints" in d for d in details)
    assert any("maps keys to strings" in d for d in details)
    assert any("names the whole status" in d for d in details)


class _AnyArgs(Args):
    anything: Any = None
    weight: int = 1


class _NotArgs(BaseModel):
    weight: int = 1


class _BadDefault(Args):
    weight: int = "heavy"  # type: ignore[assignment]


def test_args_rules():
    found = [p.detail for p in args_problems(Plugin("A", args=_AnyArgs))]
    assert found == ["field anything accepts a map, a list, a string, a number and a bool alike: give it a type"]
    assert "not a subclass of scheduler.framework.Args" in args_problems(Plugin("B", args=_NotArgs))[0].detail  # type: ignore[arg-type]
    bad = args_problems(Plugin("C", args=_BadDefault))
    assert bad[0].detail.startswith("the default args") and "weight" in bad[0].detail


def test_check_plugin_runs_every_rule():
    assert check_plugin(REGISTRY["NetworkAware"], seeds=range(2)) == []
    assert {p.rule for p in check_plugin(Plugin("A", args=_AnyArgs, pre_filter=lambda pod, args: None,
                                                requeue_on=ClusterEvent.NODE_LABELS_CHANGED))} == {"args", "requeue"}


def test_a_plugin_refusing_a_pod_field_by_name_is_no_finding_but_a_crash_is():
    def pre_filter(pod, args):
        if pod.labels.get("app") == "b":
            raise PodSpecError("metadata.labels[app]", "b is not allowed here")
        return pod.labels.get("app")

    def filter_node(state, node):
        return None

    def crashing_batch(state, nodes):
        return [None for _ in nodes] if state is None else [nodes[99]]

    plugin = Plugin("Picky", pre_filter=pre_filter, filter_node=filter_node,
                    filter_batch=lambda state, nodes: [filter_node(state, n) for n in nodes])
    assert batch_form_problems(plugin, seeds=range(2), nodes=5) == []
    crashing = dataclasses.replace(plugin, filter_batch=crashing_batch)
    found = batch_form_problems(crashing, seeds=range(2), nodes=5)
    assert found and found[0].detail.startswith("raised IndexError: list index out of range (pod ")
