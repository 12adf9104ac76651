"""A resource miss said once (labkit.placement.explain_misses): what the pod asks, the most any node has free
and where, and the terminal table's identical failing rows collapsed with their count. Node names sort
naturally everywhere (labkit.natural). Pure: objects built as the API sends them, the scheduler's plugins."""

from __future__ import annotations

import io

from rich.console import Console

from kubeapi_testserver.objects import make_node, make_pod
from labkit.natural import natural_key, natural_sorted
from labkit.placement.explain import cluster_view, explain_pod
from labkit.placement.explain_misses import amount, short_resources
from labkit.placement.explain_view import print_explanation, verdict_rows
from tests.placement.test_explain import SCHEDULER, lab_config

NATURAL = ["Node-3", "node-", "node-1", "node-1a", "node-2", "node-9", "node-10", "node-100", "worker-a2",
           "worker-a10"]


def test_natural_order_reads_digits_as_numbers():
    assert natural_sorted(list(reversed(NATURAL))) == NATURAL
    assert sorted(["node-10", "node-2", "node-1"], key=natural_key) == ["node-1", "node-2", "node-10"]
    assert natural_sorted(["node-1", "node-01"]) == ["node-01", "node-1"]  # equal numbers: by their text
    assert natural_sorted(["10", "9", "a", "1b"]) == ["1b", "9", "10", "a"]


def _cluster(count: int = 12, busy: dict[int, str] | None = None):
    """`count` workers with 4 cpu and 8Gi; `busy`: node index -> cpu a pod on it already requests."""
    nodes = [make_node(f"node-{i}", cpu="4", memory="8Gi") for i in range(count)]
    pods = [make_pod(f"busy-{i}", node_name=f"node-{i}", cpu=cpu) for i, cpu in (busy or {}).items()]
    for i, obj in enumerate(nodes + pods):
        obj["metadata"]["uid"] = f"u{i}"
    return cluster_view(nodes, pods, [])


def _explain(pod, view):
    config = lab_config()
    return explain_pod(pod, view, config.profile(SCHEDULER), config.source)


def test_a_cpu_miss_names_the_ask_and_the_most_free_node():
    # 1.5 cpu free everywhere but node-7 and node-10 (2.5 free; node-7 first in natural order)
    view = _cluster(busy={**{i: "2500m" for i in range(12)}, 7: "1500m", 10: "1500m"})
    why = _explain(make_pod("big", cpu="3", scheduler_name=SCHEDULER), view)
    [miss] = why.misses
    assert (miss.resource, miss.asked, miss.most_free, miss.most_free_node) == ("cpu", 3000, 2500, "node-7")
    assert (miss.short, miss.nodes) == (12, 12)
    assert miss.summary == "no node has 3 cpu free; the most is 2.5 on node-7"
    assert why.as_json()["misses"][0]["summary"] == miss.summary


def test_a_request_beyond_every_nodes_allocatable_says_so():
    why = _explain(make_pod("huge", cpu="64", memory="16Gi", scheduler_name=SCHEDULER), _cluster(3))
    by = {m.resource: m for m in why.misses}
    assert list(by) == ["cpu", "memory"]
    assert by["cpu"].summary == ("no node has 64 cpu free; the most is 4 on node-0; no node has 64 even empty "
                                 "(the largest allocatable is 4 on node-0)")
    assert by["memory"].summary.startswith("no node has 16Gi memory free; the most is 8Gi on node-0")


def test_a_node_with_room_failing_for_another_reason_is_named_as_such():
    # node-2 has room but is cordoned: the miss says it fails for another reason
    pod = make_pod("p", cpu="2", scheduler_name=SCHEDULER)
    nodes = [make_node(f"node-{i}", cpu="4", memory="8Gi", unschedulable=(i == 2)) for i in range(3)]
    pods = [make_pod(f"busy-{i}", node_name=f"node-{i}", cpu="3") for i in (0, 1)]
    for i, obj in enumerate(nodes + pods):
        obj["metadata"]["uid"] = f"u{i}"
    why = _explain(pod, cluster_view(nodes, pods, []))
    [miss] = why.misses
    assert miss.summary == "2 of 3 nodes lack 2 cpu free; the most is 4 on node-2 (which fails for another reason)"


def test_a_pod_that_fits_somewhere_has_no_miss_summary():
    why = _explain(make_pod("small", cpu="1", scheduler_name=SCHEDULER), _cluster(3, busy={0: "4"}))
    assert why.misses == [] and why.as_json()["misses"] == []


def test_amounts_read_as_people_write_them():
    assert [amount("cpu", v) for v in (3000, 1500, 250, 0)] == ["3", "1.5", "0.25", "0"]
    assert [amount("memory", v) for v in (8 << 30, 3 << 29, 512 << 20, 100)] == ["8Gi", "1.5Gi", "512Mi", "100"]
    assert amount("example.com/gpu", 2) == "2"
    assert short_resources(["TaintToleration: x", "NodeResourcesFit: Too many pods",
                            "NodeResourcesFit: Insufficient example.com/gpu"]) == ["pods", "example.com/gpu"]


def test_identical_failing_rows_collapse_with_their_count():
    view = _cluster(60, busy={i: "3500m" for i in range(60)})
    why = _explain(make_pod("big", cpu="3", scheduler_name=SCHEDULER), view)
    assert len(verdict_rows(why.nodes)) == 1 and len(verdict_rows(why.nodes, every_node=True)) == 60
    out = io.StringIO()
    print_explanation(Console(file=out, width=160), why)
    text = out.getvalue()
    assert "60 nodes: node-0, node-1, node-2, …" in text
    assert text.count("Insufficient cpu") == 1 + why.message.count("Insufficient cpu")
    assert "cpu: the pod asks 3; no node has 3 cpu free; the most is 0.5 on node-0" in text
    every = io.StringIO()
    print_explanation(Console(file=every, width=160), why, every_node=True)
    assert "node-59" in every.getvalue() and "60 nodes:" not in every.getvalue()


def test_failing_rows_list_nodes_in_natural_order():
    view = _cluster(12, busy={i: "3500m" for i in range(12)})
    why = _explain(make_pod("big", cpu="3", scheduler_name=SCHEDULER), view)
    assert [n.node for n in why.nodes] == [f"node-{i}" for i in range(12)]


def test_pod_slots_and_extended_resources_are_said_too():
    nodes = [make_node(f"node-{i}", pods=2) for i in range(3)]
    nodes[1]["status"]["allocatable"]["example.com/gpu"] = nodes[1]["status"]["capacity"]["example.com/gpu"] = "1"
    pods = [make_pod(f"busy-{i}-{j}", node_name=f"node-{i}") for i in range(3) for j in range(2)]
    pod = make_pod("trainer", scheduler_name=SCHEDULER)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "2"},
                                                 "limits": {"example.com/gpu": "2"}}
    for i, obj in enumerate(nodes + pods):
        obj["metadata"]["uid"] = f"u{i}"
    why = _explain(pod, cluster_view(nodes, pods, []))
    by = {m.resource: m for m in why.misses}
    assert by["pods"].summary == "no node has a free pod slot; the most is 0 on node-0"
    assert by["example.com/gpu"].summary == ("no node has 2 example.com/gpu free; the most is 1 on node-1; no node "
                                             "has 2 even empty (the largest allocatable is 1 on node-1)")
