"""test-placement end to end: `python -m labkit.placement` (what `./lab test-placement` runs) against the
Kubernetes API test server, with the real scheduler (`python -m scheduler`) running as a subprocess.

Stand-ins (tests/placement/standins.py): the API test server for kube-apiserver + etcd; Node objects for
kubeadm's nodes; DeploymentStandIn for kube-controller-manager + the kubelet running the scheduler's
Deployment; KubeletStandIn for the kubelets marking bound pods Running. Everything else is the shipped
code: the runner, the scheduler, its config as deploy-scheduler renders it into a ConfigMap.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from labkit.paths import PROJECT_ROOT
from labkit.placement.scenarios import SCENARIOS_FILE
from tests.placement.conftest import Cluster, by_scenario
from tests.placement.standins import (
    CONTROL_PLANE,
    PLUGIN_FOLDERS,
    WORKERS,
    DeploymentStandIn,
    KubeletStandIn,
    SchedulerProcess,
    deploy_scheduler,
    make_lab,
    network_scenarios,
    write_lab,
)

pytestmark = pytest.mark.api

LABEL = "network-topology"


def test_every_scenario_passes_and_the_cluster_is_left_as_found(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    labels_before = cluster.node_labels()
    code, report = cluster.run_json("--include-restart", "--timeout", "60")
    results = by_scenario(report)
    assert code == 0, report
    assert report["ok"] and report["problem"] is None
    assert [r["verdict"] for r in report["results"]] == ["pass"] * 8, report["results"]
    # the built-in scenarios, then the plugin folders' files the lab lists under placement.scenarios
    assert list(results) == ["unserved", "anti-affinity", "topology-spread", "preemption", "restart",
                             "high-speed", "no-high-speed-node", "spread"]
    assert report["config_source"] == "ConfigMap kube-system/my-custom-scheduler-config"
    # 1: the high-speed pod is on the labelled worker
    assert results["high-speed"]["pods"][0]["node"] == WORKERS[0]
    # 2: 2 pods per eligible worker, never on the tainted control plane
    spread_nodes = [p["node"] for p in results["spread"]["pods"]]
    assert len(spread_nodes) == 4 and set(spread_nodes) <= set(WORKERS)
    # 3: the FailedScheduling event in kube-scheduler's form, counting all 3 nodes
    pending = results["no-high-speed-node"]["pods"][0]
    assert pending["node"] is None
    assert [e["message"] for e in pending["events"] if e["reason"] == "FailedScheduling"][-1].startswith(
        "0/3 nodes are available: ")
    # 4: untouched by any scheduler
    assert results["unserved"]["pods"][0]["node"] is None and results["unserved"]["pods"][0]["events"] == []
    # 5: required anti-affinity: one per worker, the third Pending for kube-scheduler's reason
    anti = results["anti-affinity"]["pods"]
    assert sorted(p["node"] for p in anti if p["node"]) == sorted(WORKERS)
    [waiting] = [p for p in anti if p["node"] is None]
    assert "node(s) didn't match pod anti-affinity rules" in waiting["events"][-1]["message"]
    # 6: DoNotSchedule spread over the workers (the tainted control plane is no domain): 5 pods as 3 + 2
    spread_counts = sorted(Counter(p["node"] for p in results["topology-spread"]["pods"]).items())
    assert [n for n, _ in spread_counts] == sorted(WORKERS) and sorted(c for _, c in spread_counts) == [2, 3]
    # 7: one low-priority pod per worker, one of them preempted with an event, the high-priority pod in its place
    preemption = results["preemption"]["pods"]
    victims = [p for p in preemption if p["node"] is None]
    assert len(preemption) == 1 + len(WORKERS) and len(victims) == 1
    assert preemption[-1]["node"] in WORKERS
    assert any(e["reason"] == "Preempted" for e in victims[0]["events"])
    assert cluster.server.list_objects("priorityclasses") == []
    # 8: bound only once the scheduler was back
    assert results["restart"]["pods"][0]["node"] in WORKERS
    assert deployed.starts == 2
    # cleanup: namespace gone, labels as before, the scheduler scaled back to 1
    assert cluster.placement_namespaces() == []
    assert cluster.node_labels() == labels_before
    assert "unschedulable" not in cluster.server.get_object("nodes", WORKERS[1])["spec"]
    assert "taints" not in cluster.server.get_object("nodes", WORKERS[1])["spec"]
    deployment = cluster.server.get_object("deployments", "my-custom-scheduler", "kube-system")
    assert deployment["spec"]["replicas"] == 1


def test_table_lists_each_scenario_with_its_verdict(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    proc = cluster.run(via_invoke=True)  # ./lab test-placement
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for scenario in ("high-speed", "spread", "unserved", "no-high-speed-node", "anti-affinity", "topology-spread",
                     "preemption"):
        row = next((line for line in lines if line.startswith(f"│ {scenario} ")), None)
        assert row is not None and "pass" in row, proc.stdout
    assert "0/3 nodes are available" in proc.stdout
    assert "restart" not in proc.stdout  # opt-in only
    assert "7 passed, 0 missed, 0 skipped" in proc.stdout


def test_wrong_label_value_in_the_lab_is_a_miss_with_the_why(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    """The scheduler runs with labelValue high-speed; the lab and the user's scenario now say ultra-fast. The
    run labels the first worker ultra-fast and annotates the pod ultra-fast, which NetworkAware does not act
    on, so least-loaded decides: with more pods already on the labelled worker the pod lands on the other one."""
    for i in range(3):
        cluster.server.add_pod(f"busy-{i}", "default", node_name=WORKERS[0], cpu="10m")
    wrong = write_lab(cluster.workdir / "wrong-value.yaml",
                      network_aware={"annotationKey": "my-network-preference", "labelKey": LABEL,
                                     "labelValue": "ultra-fast"})
    scenarios = network_scenarios(cluster.workdir / "ultra-fast.yaml", LABEL, "ultra-fast")
    code, report = cluster.run_json("--scenarios", str(scenarios), "--only", "high-speed", "--timeout", "20",
                                    lab_file=wrong)
    assert code == 1 and not report["ok"]
    result = by_scenario(report)["high-speed"]
    assert result["verdict"] == "miss"
    assert result["reason"] == (f"high-speed-1 bound to {WORKERS[1]}, not to nodes with {LABEL}=ultra-fast "
                                f"({WORKERS[0]})")
    assert any("labelValue 'high-speed' (lab: 'ultra-fast')" in w and "deploy-scheduler" in w
               for w in report["warnings"]), report["warnings"]
    assert [e["reason"] for e in result["pods"][0]["events"]] == ["Scheduled"]
    why = {n["node"]: n for n in result["explanation"]["nodes"]}
    assert not why[CONTROL_PLANE]["fits"]
    assert any(r.startswith("TaintToleration: node(s) had untolerated taint") for r in why[CONTROL_PLANE]["reasons"])
    assert why[WORKERS[0]]["fits"] and why[WORKERS[1]]["fits"]
    assert why[WORKERS[1]]["scores"]["LeastLoaded"] > why[WORKERS[0]]["scores"]["LeastLoaded"]
    assert why[WORKERS[0]]["scores"]["NetworkAware"] == why[WORKERS[1]]["scores"]["NetworkAware"] == 0
    assert result["explanation"]["would_choose"] == [WORKERS[1]]
    assert cluster.placement_namespaces() == [] and LABEL not in cluster.node_labels()[WORKERS[0]]
    assert result["explanation"]["notes"] == []  # the explainer knows no plugin: the scores above say it


def test_wrong_label_key_leaves_the_pod_pending_and_the_table_shows_why(cluster: Cluster,
                                                                         deployed: DeploymentStandIn) -> None:
    """The lab and the user's scenarios say the label key is network-tier, the scheduler looks for
    network-topology: the labelled worker does not count, the high-speed pod cannot land anywhere. Run
    through `invoke test-placement` with two scenario files (--scenarios is repeatable)."""
    wrong = write_lab(cluster.workdir / "wrong-key.yaml",
                      network_aware={"annotationKey": "my-network-preference", "labelKey": "network-tier",
                                     "labelValue": "high-speed"})
    scenarios = network_scenarios(cluster.workdir / "network-tier.yaml", "network-tier", "high-speed")
    proc = cluster.run("--timeout", "5", "--scenarios", str(SCENARIOS_FILE), "--scenarios", str(scenarios),
                       lab_file=wrong, via_invoke=True)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "labelKey 'network-topology' (lab: 'network-tier')" in " ".join(out.split())
    row = next(line for line in out.splitlines() if line.startswith("│ high-speed "))
    assert "miss" in row and "1 of 1 pods not bound (high-speed-1): 0/3 nodes are available" in row
    assert "events of high-speed-1:" in out and "FailedScheduling (my-custom-scheduler): 0/3 nodes" in out
    assert "why: placement-" in out
    # no-high-speed-node misses too: the pod is Pending, but for the scheduler's label, not the lab's
    no_label_row = next(line for line in out.splitlines() if line.startswith("│ no-high-speed-node "))
    assert "miss" in no_label_row and "does not say 'network-tier'" in no_label_row
    # one explanation per miss; the workers fail for the same reason: one row for both
    worker_rows = [line for line in out.splitlines() if line.startswith(f"│ 2 nodes: {', '.join(WORKERS)} ")]
    assert len(worker_rows) == 2
    for line in worker_rows:
        assert "NetworkAware: node(s) didn't have label network-topology=high-speed" in line
    assert "4 passed, 2 missed, 0 skipped" in out  # the built-in ones pass


def test_no_scheduler_says_so_and_how_to_deploy_it(cluster: Cluster) -> None:
    proc = cluster.run("--probe-seconds", "2")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "The scheduler my-custom-scheduler is not running in this cluster" in text
    assert "there is no Deployment kube-system/my-custom-scheduler" in text
    assert "no leader Lease kube-system/my-custom-scheduler exists" in text
    assert "./lab deploy-scheduler" in text
    assert "│" not in proc.stdout  # no table of timeouts
    assert cluster.placement_namespaces() == []


def test_scheduler_scaled_to_zero_is_named(cluster: Cluster) -> None:
    lab = make_lab()
    deploy_scheduler(cluster.server, lab)
    cluster.server.update_object("deployments", lab.scheduler.name, {"spec": {"replicas": 0}}, "kube-system")
    with DeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir) as standin:
        code, report = cluster.run_json("--probe-seconds", "2")
    assert standin.starts == 0
    assert code == 3 and report["results"] == []
    assert "is scaled to 0" in report["problem"]
    assert "kubectl -n kube-system scale deployment/my-custom-scheduler --replicas=1" in report["problem"]


def test_scheduler_running_beside_the_cluster(cluster: Cluster) -> None:
    """No Deployment or ConfigMap: the scheduler runs on the host; --scheduler-config names its config."""
    from labkit.scheduler_deploy.manifests import render_config

    process = SchedulerProcess(render_config(make_lab()), cluster.kubeconfig, cluster.workdir, PLUGIN_FOLDERS)
    process.start()
    try:
        code, report = cluster.run_json("--include-restart", "--scheduler-config", str(process.config_file))
    finally:
        process.stop()
    results = by_scenario(report)
    assert code == 0, report
    assert report["config_source"] == f"file {process.config_file}"
    assert [results[s]["verdict"] for s in ("high-speed", "spread", "unserved", "no-high-speed-node")] == ["pass"] * 4
    assert results["restart"]["verdict"] == "skipped"
    assert "no Deployment kube-system/my-custom-scheduler to scale" in results["restart"]["reason"]


def test_spread_is_skipped_when_the_scheduler_does_not_balance_pod_counts(cluster: Cluster) -> None:
    lab = make_lab(least_loaded={"mode": "requestedResources", "strategy": "LeastAllocated"})
    deploy_scheduler(cluster.server, lab)
    with DeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir):
        code, report = cluster.run_json("--only", "spread")
    result = by_scenario(report)["spread"]
    assert code == 0 and result["verdict"] == "skipped"
    assert result["reason"].startswith("the scheduler runs LeastLoaded with mode 'requestedResources' (scenario: "
                                       "'podCount') (ConfigMap kube-system/my-custom-scheduler-config)")
    assert result["pods"] == []


def test_keep_leaves_the_namespace_pods_and_labels(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    proc = cluster.run("--only", "high-speed", "--keep")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [namespace] = cluster.placement_namespaces()
    assert cluster.server.bound_pods(namespace) == {f"{namespace}/high-speed-1": WORKERS[0]}
    assert cluster.node_labels()[WORKERS[0]][LABEL] == "high-speed"
    assert f"kubectl delete namespace {namespace}" in proc.stdout
    assert f"kubectl label node {WORKERS[0]} {LABEL}-" in proc.stdout
    # the next run points at what the kept run left behind
    _code, report = cluster.run_json("--only", "unserved")
    assert any(w.startswith(f"namespaces left by earlier runs: {namespace} ") for w in report["warnings"]), report


def test_wait_running_waits_for_the_kubelet(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    with KubeletStandIn(cluster.server):
        code, report = cluster.run_json("--only", "high-speed", "--wait-running")
    assert code == 0, report
    assert by_scenario(report)["high-speed"]["pods"][0]["phase"] == "Running"


def test_wait_running_without_a_kubelet_is_a_miss(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    code, report = cluster.run_json("--only", "high-speed", "--wait-running", "--timeout", "2")
    result = by_scenario(report)["high-speed"]
    assert code == 1
    assert result["verdict"] == "miss"
    assert result["reason"].startswith(f"bound but not Running within 2 s: high-speed-1 on {WORKERS[0]} is Pending")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_cleans_up(cluster: Cluster, deployed: DeploymentStandIn, signum: int) -> None:
    """Ctrl-C (or SIGTERM) while a scenario waits: the namespace goes and the labels come back."""
    scenarios = cluster.workdir / "scenarios.yaml"
    scenarios.write_text(
        "scenarios:\n"
        "  - {id: high-speed, title: t, nodes: [{select: {role: worker, index: 0}, labels: {network-topology: high-speed}}],"
        " pods: {count: 1}, expect: {bound: {}}}\n"
        "  - {id: unserved, title: t, nodes: [{select: {name: k8s-worker-02}, cordon: true, taints: [{key: k, effect: NoSchedule}]}],"
        " pods: {count: 1, scheduler: unserved}, expect: {untouched: {seconds: 300}}}\n")
    labels_before = cluster.node_labels()
    cmd = [sys.executable, "-m", "labkit.placement", "--lab", str(cluster.lab_file), "--kubeconfig",
           str(cluster.kubeconfig), "--scenarios", str(scenarios)]
    # A shell starts background jobs with SIGINT ignored, and exec keeps an ignored signal ignored: a handler
    # in place while the run starts gives it the default disposition a user's Ctrl-C meets.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        cluster.server.wait_for(lambda: any(p["metadata"]["name"] == "unserved-1" for p in cluster.server.pods()),
                                timeout=60)
        assert LABEL not in cluster.node_labels()[WORKERS[0]]  # restored after its scenario
        assert cluster.server.get_object("nodes", WORKERS[1])["spec"]["unschedulable"] is True
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "restored k8s-worker-01 network-topology (unset)" in err
    assert "cleanup: restored nodes: k8s-worker-02 no taints; k8s-worker-02 uncordoned" in err, err
    assert "cleanup: deleted namespace placement-" in err
    assert cluster.placement_namespaces() == []
    assert cluster.node_labels() == labels_before
    assert "unschedulable" not in cluster.server.get_object("nodes", WORKERS[1])["spec"]
    assert "taints" not in cluster.server.get_object("nodes", WORKERS[1])["spec"]


def test_context_picks_the_cluster(cluster: Cluster, deployed: DeploymentStandIn, tmp_path: Path) -> None:
    """A kubeconfig whose current context is another (unreachable) cluster: --context selects ours."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    live = config["current-context"]
    config["clusters"].append({"name": "other", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append({"name": "other", "context": {"cluster": "other", "user": live}})
    config["current-context"] = "other"
    both = tmp_path / "two-contexts"
    both.write_text(yaml.safe_dump(config))
    code, report = cluster.run_json("--kubeconfig", str(both), "--context", live, "--only", "high-speed")
    assert code == 0 and report["server"].startswith(cluster.server.url), report
    proc = cluster.run("--kubeconfig", str(both), "--context", "nope")
    assert proc.returncode == 2 and "--context" in proc.stderr and "Traceback" not in proc.stderr


def test_api_error_mid_run_stops_and_still_cleans_up(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    cluster.server.fail_next(1, 500, verb="patch", resource="nodes", message="etcdserver: request timed out")
    code, report = cluster.run_json("--only", "high-speed")
    assert code == 2 and report["results"] == []
    assert report["problem"] == ("the run stopped on an API error: PATCH /api/v1/nodes/k8s-worker-01: 500 "
                                 "etcdserver: request timed out")
    assert cluster.placement_namespaces() == []
    assert any(line.startswith("deleted namespace placement-") for line in report["cleanup"])


def test_unreachable_api_server_is_one_message(cluster: Cluster, tmp_path: Path) -> None:
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(cluster.kubeconfig.read_text().replace(cluster.server.url, "http://127.0.0.1:9"))
    proc = cluster.run("--kubeconfig", str(dead))
    assert proc.returncode == 2
    assert "cannot reach the API server at http://127.0.0.1:9" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_kubeconfig_says_how_to_get_one(cluster: Cluster, tmp_path: Path) -> None:
    proc = cluster.run("--kubeconfig", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert "no such kubeconfig" in proc.stderr and "./lab up" in proc.stderr


def test_bad_scenarios_file_names_the_field(cluster: Cluster, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios:\n  - {id: x, title: t, pods: {count: 1}, expect: {placement: elsewhere}}\n")
    proc = cluster.run("--scenarios", str(bad))
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert f"{bad}: the placement scenarios are invalid" in text and "Traceback" not in proc.stderr
    assert "scenario 'x' (scenarios[0]): expect.placement: unknown field" in text
    assert cluster.placement_namespaces() == []


def test_a_scenarios_node_changes_and_patch_hold_for_every_expectation(cluster: Cluster,
                                                                       deployed: DeploymentStandIn) -> None:
    """A spread of annotated pods with the first worker labelled is judged over the labelled worker alone
    (the eligible nodes are what the scheduler's filters allow), and every pod lands there."""
    scenarios = cluster.workdir / "scenarios.yaml"
    scenarios.write_text(
        "scenarios:\n"
        "  - {id: fast-spread, title: t, nodes: [{select: {role: worker, index: 0}, labels: {network-topology: high-speed}}],"
        " pods: {per_eligible_node: 2, patch: {metadata: {annotations: {my-network-preference: high-speed}}}},"
        " expect: {spread: {within: 1, counting: all}, bound: {nodes: {labels: {network-topology: high-speed}}}}}\n")
    code, report = cluster.run_json("--scenarios", str(scenarios))
    result = by_scenario(report)["fast-spread"]
    assert code == 0 and result["verdict"] == "pass", report
    assert result["expected"] == "bound to nodes with network-topology=high-speed; spread within 1 (all pods)"
    assert [p["node"] for p in result["pods"]] == [WORKERS[0], WORKERS[0]]
    assert LABEL not in cluster.node_labels()[WORKERS[0]]  # undone after the run


def test_taints_and_cordons_steer_pods_and_are_restored(cluster: Cluster, deployed: DeploymentStandIn) -> None:
    """A scenario's NoSchedule taint on one worker and a cordon on the other: a pod tolerating the taint
    (a patch) lands on the tainted worker; without the toleration, Pending for both reasons."""
    scenarios = cluster.workdir / "scenarios.yaml"
    nodes = [{"select": {"role": "worker", "index": 0},
              "taints": [{"key": "dedicated", "value": "lab", "effect": "NoSchedule"}]},
             {"select": {"name": WORKERS[1]}, "cordon": True}]
    toleration = {"key": "dedicated", "operator": "Equal", "value": "lab", "effect": "NoSchedule"}
    scenarios.write_text(yaml.safe_dump({"scenarios": [
        {"id": "tolerated", "title": "t", "nodes": nodes,
         "pods": {"count": 2, "patch": {"spec": {"tolerations": [toleration]}}},
         "expect": {"bound": {"nodes": {"role": "worker", "index": 0}}}},
        {"id": "not-tolerated", "title": "t", "nodes": nodes, "pods": {"count": 1},
         "expect": {"pending": {"reason": "node(s) were unschedulable"}}}]}))
    code, report = cluster.run_json("--scenarios", str(scenarios), "--timeout", "20")
    results = by_scenario(report)
    assert code == 0, report
    assert [p["node"] for p in results["tolerated"]["pods"]] == [WORKERS[0], WORKERS[0]]
    assert results["tolerated"]["expected"] == "bound to worker #0"
    message = results["not-tolerated"]["pods"][0]["events"][-1]["message"]
    assert "untolerated taint" in message and "node(s) were unschedulable" in message, message
    for worker in WORKERS:
        spec = cluster.server.get_object("nodes", worker)["spec"]
        assert "taints" not in spec and "unschedulable" not in spec, spec


def test_a_selector_matching_no_node_is_refused_before_anything_changes(cluster: Cluster,
                                                                       deployed: DeploymentStandIn) -> None:
    scenarios = cluster.workdir / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  - {id: far, title: t, nodes: [{select: {role: worker, index: 5}, cordon: true}],"
                         " pods: {count: 1}, expect: {bound: {}}}\n")
    proc = cluster.run("--scenarios", str(scenarios))
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert (f"{scenarios}: scenario 'far': nodes[0].select: worker #5 matches no node of this cluster "
            f"(nodes: {CONTROL_PLANE}, {', '.join(WORKERS)})") in text
    assert cluster.placement_namespaces() == []


def test_a_scheduler_ignoring_anti_affinity_misses_and_the_miss_explains_itself(cluster: Cluster) -> None:
    """The scheduler runs beside the cluster with InterPodAffinity disabled (what a scheduler that ignores the
    field does): three pods of the set on two workers, so one worker holds two; the miss shows the explainer's
    table for a pod of the set, with that configuration (every worker fits)."""
    from labkit.scheduler_deploy.manifests import render_config

    config = yaml.safe_load(render_config(make_lab()))
    config["profiles"][0]["plugins"]["multiPoint"]["disabled"] = [{"name": "InterPodAffinity"}]
    process = SchedulerProcess(yaml.safe_dump(config), cluster.kubeconfig, cluster.workdir, PLUGIN_FOLDERS)
    process.start()
    try:
        code, report = cluster.run_json("--only", "anti-affinity", "--scheduler-config", str(process.config_file),
                                        "--timeout", "30")
    finally:
        process.stop()
    result = by_scenario(report)["anti-affinity"]
    assert code == 1 and result["verdict"] == "miss", report
    assert result["reason"].startswith("0 of 3 pods Pending, expected 1 (bound: anti-affinity-1->k8s-worker-0")
    why = {n["node"]: n for n in result["explanation"]["nodes"]}
    assert why[WORKERS[0]]["fits"] and why[WORKERS[1]]["fits"]
    assert "InterPodAffinity" not in result["explanation"]["weights"]
