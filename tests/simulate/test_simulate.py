"""`./lab simulate` (labkit.simulate): its two files refused by file, item and field before anything runs, a
profile naming an unknown plugin refused with the registered ones, and whole runs on a simulated clock:
arrivals at a rate, durations that free room, preemption deleting its victims, gangs placed whole, --until
ending a workload that cannot finish, the comparison as JSON and HTML, and a pod explained per profile."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from labkit.simulate.cli import SimulateOptions, execute, prepare
from labkit.simulate.engine import run_profile
from labkit.simulate.report import report
from labkit.simulate.schema import SimulateInputError

REPO = Path(__file__).resolve().parents[2]
MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: packed
    pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def pools(tmp_path: Path, count: int = 3, cpu: str = "4", zones: str = "[a, b, c]") -> Path:
    return write(tmp_path, "pools.yaml", f"pools:\n  - name: n\n    count: {count}\n"
                                         f"    capacity: {{cpu: '{cpu}', memory: 16Gi, pods: '110'}}\n"
                                         f"    zones: {zones}\n")


def simulate(tmp_path: Path, workload: str, *, cluster: Path | None = None, profiles: tuple[str, ...] = (),
             **options) -> dict:
    paths = [write(tmp_path, f"profile{i}.yaml", text) for i, text in enumerate(profiles)]
    opts = SimulateOptions(workload=write(tmp_path, "workload.yaml", workload),
                           cluster=cluster or pools(tmp_path), profiles=paths, **options)
    cluster_, work, profs = prepare(None, opts)
    runs = [run_profile(p, cluster_, work, until=opts.until, explain=opts.explain) for p in profs]
    return report(runs) | {"runs": runs}


def test_a_wrong_workload_field_is_refused_by_file_item_and_field(tmp_path):
    workload = write(tmp_path, "w.yaml", "items:\n  - name: web\n    replica: 3\n  - name: db\n    rate: -1\n")
    with pytest.raises(SimulateInputError) as err:
        prepare(None, SimulateOptions(workload=workload, cluster=pools(tmp_path)))
    message = str(err.value)
    assert f"{workload}: not a valid workload file" in message
    assert "items[0] (web): replica: unknown field" in message
    assert "items[1] (db): rate: Input should be greater than 0" in message


def test_a_wrong_pool_field_is_refused_before_anything_runs(tmp_path):
    cluster = write(tmp_path, "c.yaml", "pools:\n  - name: big\n    count: 0\n    taints: [{key: k, effect: Sometimes}]\n")
    with pytest.raises(SimulateInputError) as err:
        prepare(None, SimulateOptions(workload=write(tmp_path, "w.yaml", "items: [{name: a}]\n"), cluster=cluster))
    assert "pools[0] (big): count: Input should be greater than or equal to 1" in str(err.value)
    assert "pools[0] (big): taints.0.effect" in str(err.value)


def test_a_profile_naming_an_unknown_plugin_lists_the_registered_ones(tmp_path):
    profile = write(tmp_path, "p.yaml", MOST_ALLOCATED.replace("NodeResourcesFit", "NodeCosts"))
    with pytest.raises(SimulateInputError) as err:
        prepare(None, SimulateOptions(workload=write(tmp_path, "w.yaml", "items: [{name: a}]\n"),
                                      cluster=pools(tmp_path), profiles=[profile]))
    assert "unknown plugin 'NodeCosts' (registered: NodeUnschedulable," in str(err.value)


def test_pods_arrive_at_their_rate_and_finished_pods_free_their_room(tmp_path):
    # one 4-cpu node: two 2-cpu pods at a time; each runs 10 s
    out = simulate(tmp_path, "items:\n  - {name: job, replicas: 6, rate: 1, duration: 10, requests: {cpu: '2'}}\n",
                   cluster=pools(tmp_path, count=1, zones="[]"))
    run = out["runs"][0]
    assert out["profiles"][0]["bound"] == 6 and out["profiles"][0]["pending"] == 0
    assert run.arrived["default/job-3"] == 3.0
    assert run.bound_at["default/job-0"] == 0.0 and run.bound_at["default/job-2"] == 10.0  # room at 10 s
    assert out["profiles"][0]["time_to_bind"]["max"] > 0
    series = out["profiles"][0]["pending_over_time"]
    assert series[:2] == [[0.0, 0], [2.0, 1]] and [10.0, 3] in series and series[-1][1] == 0  # 2 s: job-2 waits


def test_until_ends_a_workload_that_cannot_finish_with_what_is_still_pending(tmp_path):
    out = simulate(tmp_path, "items:\n  - {name: huge, replicas: 2, requests: {cpu: '64'}}\n", until=120.0)
    summary = out["profiles"][0]
    assert summary["bound"] == 0 and summary["pending"] == 2
    assert summary["ended_at"] == 120.0 and summary["not_arrived"] == 0
    assert summary["pending_reasons"] == {
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling.": 2}


def test_preemption_deletes_its_victims(tmp_path):
    workload = ("items:\n  - {name: low, replicas: 3, requests: {cpu: '3'}}\n"
                "  - {name: high, at: 5, priority: 1000, requests: {cpu: '3'}}\n")
    out = simulate(tmp_path, workload)
    summary, run = out["profiles"][0], out["runs"][0]
    assert summary["preempted"] == 1 and summary["bound"] == 4
    (victim, preemptor), = run.preempted.items()
    assert preemptor == "default/high-0" and run.node_of["default/high-0"] == run.node_of[victim]


def test_a_gang_is_placed_whole_or_not_at_all(tmp_path):
    workload = ("items:\n  - {name: fits, replicas: 3, requests: {cpu: '3'}, gang: {scheduleTimeoutSeconds: 5}}\n"
                "  - {name: too-big, replicas: 4, at: 1, requests: {cpu: '3'}, gang: {scheduleTimeoutSeconds: 5}}\n")
    profile = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
               "  - schedulerName: gangs\n    plugins:\n      multiPoint: {enabled: [{name: Coscheduling}]}\n"
               "      queueSort: {disabled: [{name: PrioritySort}]}\n")
    out = simulate(tmp_path, workload, profiles=(profile,), plugins=[str(REPO / "examples" / "coscheduling")],
                   cluster=pools(tmp_path, count=4, zones="[]"), until=60.0)
    default, gangs = out["profiles"]
    assert default["bound"] == 4  # without the gang plugin, one by one: a 3-cpu pod per node, 1 of too-big's among them
    assert gangs["bound"] == 3 and gangs["pending"] == 4
    assert sorted(k for k in out["runs"][1].node_of) == ["default/fits-0", "default/fits-1", "default/fits-2"]


def test_profiles_side_by_side_name_the_pods_they_place_differently_and_explain_one(tmp_path):
    out = simulate(tmp_path, "items:\n  - {name: web, replicas: 4, requests: {cpu: '1'}}\n",
                   profiles=(MOST_ALLOCATED,), explain="web-1")
    labels = [p["profile"] for p in out["profiles"]]
    assert labels == ["default", "profile0"]
    assert out["profiles"][1]["nodes_used"] == 1 and out["profiles"][0]["nodes_used"] == 3
    assert "default/web-1" in out["differences"]
    spread_, packed = (r.explanation for r in out["runs"])
    assert spread_.chosen == out["runs"][0].node_of["default/web-1"]
    assert {n.node for n in packed.nodes} == {"n-0", "n-1", "n-2"}
    assert packed.weights["NodeResourcesFit"] == 1


def test_the_verb_prints_json_and_writes_one_self_contained_html_file(tmp_path, capsys):
    html = tmp_path / "sim.html"
    options = SimulateOptions(workload=write(tmp_path, "w.yaml", "items:\n  - {name: web, replicas: 5, rate: 1, "
                                                                 "requests: {cpu: '1'}}\n"),
                              cluster=pools(tmp_path), profiles=[write(tmp_path, "packed.yaml", MOST_ALLOCATED)])
    assert execute(None, options, Console(file=io.StringIO()), json_output=True, html=html) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["bound"] for p in data["profiles"]] == [5, 5]
    page = html.read_text()
    assert page.count("<svg") >= 3 and "<script src" not in page and "http" not in page.replace("http://www.w3.org", "")
    assert "packed" in page and "n-0" in page
    assert 'id="kv-overview-0"' in page and 'id="kv-overview-1"' in page  # every node's grid, per profile
    assert data["profiles"][0]["node_grid"][0]["allocatable"]["pods"] > 0


def test_a_cluster_file_of_nodes_and_pods_counts_the_bound_pods_and_runs_the_pending_ones(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", """\
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: '2', memory: 8Gi, pods: '110'}}
---
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: '2', memory: 8Gi, pods: '110'}}
---
kind: Pod
metadata: {name: there}
spec: {nodeName: a, containers: [{name: c, image: i, resources: {requests: {cpu: '2'}}}]}
---
kind: Pod
metadata: {name: waiting}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}
""")
    out = simulate(tmp_path, "items:\n  - {name: web, requests: {cpu: '1'}}\n", cluster=cluster)
    assert out["profiles"][0]["placements"] == {"default/waiting": "b", "default/web-0": "b"}


def test_an_unreachable_cluster_is_said_so_with_the_address_tried(tmp_path):
    from kubeapi_testserver.fixtures import free_port
    from kubeapi_testserver.kubeconfig import write_kubeconfig

    url = f"http://127.0.0.1:{free_port()}"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url, token="t")
    options = SimulateOptions(workload=write(tmp_path, "w.yaml", "items: [{name: a}]\n"), from_cluster=True,
                              kubeconfig=kubeconfig)
    with pytest.raises(SimulateInputError) as err:
        prepare(None, options)
    assert "--from-cluster: cannot read the cluster: " in str(err.value) and url in str(err.value)
    assert "--cluster FILE" in str(err.value)


def test_pods_that_arrive_after_until_are_counted_as_not_arrived(tmp_path):
    out = simulate(tmp_path, "items:\n  - {name: web, replicas: 10, rate: 1, requests: {cpu: 100m}}\n", until=4.5)
    summary = out["profiles"][0]
    assert (summary["pods"], summary["not_arrived"], summary["bound"], summary["ended_at"]) == (10, 5, 5, 4.5)


def test_a_request_the_scheduler_cannot_read_is_refused_by_item_and_field(tmp_path):
    workload = write(tmp_path, "w.yaml", "items:\n  - name: ok\n  - name: web\n    requests: {cpu: lots}\n")
    with pytest.raises(SimulateInputError) as err:
        prepare(None, SimulateOptions(workload=workload, cluster=pools(tmp_path)))
    assert f"{workload}: not a valid workload file:\n  - items[1] (web): requests.cpu: " in str(err.value)


def test_the_page_keeps_its_node_charts_small_at_thousands_of_nodes():
    from labkit.simulate.html import BARS, util_chart

    profile = {"utilization": {"cpu": {"per_node": {f"n-{i}": (i % 10) / 10 for i in range(5000)}}}}
    chart = util_chart(profile, "cpu")
    assert chart.count("<rect") == BARS and chart.startswith("<svg")
