"""`./lab explain` end to end: the invoke verb run as a user runs it, against the Kubernetes API test server
holding the lab's nodes (tests/placement/standins.py) and the scheduler's ConfigMap as deploy-scheduler
renders it. No scheduler process runs: explain reads the cluster and the configuration, nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver.objects import make_pod
from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster
from tests.placement.standins import CONTROL_PLANE, WORKERS, deploy_scheduler, make_lab

pytestmark = pytest.mark.api

SCHEDULER = "my-custom-scheduler"
CONFIG_SOURCE = f"ConfigMap kube-system/{SCHEDULER}-config"


def explain(cluster: Cluster, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`./lab explain ...` (the invoke verb) against the test server."""
    cmd = [sys.executable, "-m", "invoke", "explain", *args, "--lab", str(cluster.lab_file),
           "--kubeconfig", str(kubeconfig or cluster.kubeconfig)]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env={**os.environ, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=120, check=False)


def explain_json(cluster: Cluster, *args: str) -> dict[str, Any]:
    proc = explain(cluster, *args, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def configured(cluster: Cluster) -> Cluster:
    deploy_scheduler(cluster.server, make_lab())  # the ConfigMap (and Deployment object), no process
    return cluster


def test_a_bound_pod_is_explained_as_if_unbound(configured: Cluster) -> None:
    """web-0 is bound to worker 1, which also holds two other pods: explained without itself, the emptier
    worker 2 is chosen now, and the output says where it is bound."""
    server = configured.server
    for i in range(2):
        server.add_pod(f"busy-{i}", node_name=WORKERS[0], cpu="10m")
    server.add_pod("web-0", scheduler_name=SCHEDULER, node_name=WORKERS[0], cpu="10m", labels={"app": "web"})
    report = explain_json(configured, "web-0")
    assert list(report) == ["pod", "scheduler", "config_source", "message", "chosen", "would_choose", "bound_to",
                            "notes", "weights", "nodes", "outcome", "points", "likely_state",
                            "inferred", "read_from", "misses", "devices"]  # the keys the README documents
    assert report["outcome"] == "bound" and report["points"] is None and report["likely_state"] is None
    assert list(report["nodes"][0]) == ["node", "fits", "reasons", "scores", "raw_scores", "normalized_scores",
                                        "total", "pods"]
    assert report["pod"] == "default/web-0" and report["scheduler"] == SCHEDULER
    assert report["config_source"] == CONFIG_SOURCE
    assert report["bound_to"] == WORKERS[0] and report["chosen"] == WORKERS[1]
    assert report["message"] == f"would choose {WORKERS[1]}; bound to {WORKERS[0]}, not the node it would choose now"
    nodes = {n["node"]: n for n in report["nodes"]}
    assert [n["node"] for n in report["nodes"]] == [WORKERS[1], WORKERS[0], CONTROL_PLANE]
    assert nodes[WORKERS[0]]["pods"] == 3  # kube-proxy and the two busy pods; web-0 itself not counted
    assert nodes[WORKERS[1]]["raw_scores"]["LeastLoaded"] == 1 and nodes[WORKERS[1]]["scores"]["LeastLoaded"] == 100
    assert nodes[WORKERS[0]]["normalized_scores"]["LeastLoaded"] == 0
    assert report["weights"]["TaintToleration"] == 3
    assert not nodes[CONTROL_PLANE]["fits"] and nodes[CONTROL_PLANE]["total"] is None
    assert nodes[CONTROL_PLANE]["reasons"][0].startswith("TaintToleration: node(s) had untolerated taint")


def test_the_table_puts_the_chosen_node_first(configured: Cluster) -> None:
    configured.server.add_pod("web-0", scheduler_name=SCHEDULER, cpu="10m")
    proc = explain(configured, "web-0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"why: default/web-0 (scheduler {SCHEDULER}, config: {CONFIG_SOURCE})" in out
    rows = [line for line in out.splitlines() if line.startswith("│ k8s-")]
    assert "(chosen)" in rows[0] and rows[-1].startswith(f"│ {CONTROL_PLANE} ")
    assert "TaintToleration: node(s) had untolerated taint" in rows[-1]
    assert "score cells: weighted score, under it raw→normalised" in out
    assert "scheduler's verdict now: would choose k8s-worker-0" in out


def test_a_namespace_selector_is_read_from_the_clusters_namespaces(configured: Cluster) -> None:
    """The explainer lists the namespaces as the scheduler's namespace informer does: a required pod
    affinity to db pods in namespaces labelled team=data fits only beside the db pod."""
    server = configured.server
    server.create_object("namespaces", {"metadata": {"name": "data", "labels": {"team": "data"}}})
    server.add_pod("db-0", "data", node_name=WORKERS[1], cpu="10m", labels={"app": "db"})
    client = make_pod("client", scheduler_name=SCHEDULER, cpu="10m")
    client["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "data"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    server.add_pod(client)
    report = explain_json(configured, "client")
    nodes = {n["node"]: n for n in report["nodes"]}
    assert report["chosen"] == WORKERS[1]
    assert nodes[WORKERS[0]]["reasons"] == ["InterPodAffinity: node(s) didn't match pod affinity rules"]


def test_what_if_explains_a_manifest_without_creating_it(configured: Cluster, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web-9, labels: {app: web}}\n"
        f"spec:\n  schedulerName: {SCHEDULER}\n  nodeSelector: {{kubernetes.io/hostname: {WORKERS[0]}}}\n"
        "  containers: [{name: c, image: pause, resources: {requests: {cpu: 10m}}}]\n")
    report = explain_json(configured, "web-9", "--what-if", str(manifest), "--namespace", "team")
    assert report["pod"] == "team/web-9" and report["chosen"] == WORKERS[0] and report["bound_to"] is None
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes[WORKERS[1]]["reasons"] == ["NodeAffinity: node(s) didn't match Pod's node affinity/selector"]
    assert configured.server.get_object("pods", "web-9", "team") is None


def test_what_if_stands_in_for_an_existing_pod_of_that_name(configured: Cluster, tmp_path: Path) -> None:
    """What if web-0, bound to worker 1 with 1.5 CPUs, asked for 100m and named worker 1 in its nodeSelector:
    the bound pod is left out of the cluster (its 1.5 CPUs not counted), so worker 1 fits."""
    configured.server.add_pod("web-0", scheduler_name=SCHEDULER, node_name=WORKERS[0], cpu="1500m")
    manifest = tmp_path / "web-0.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\n"
        f"spec:\n  schedulerName: {SCHEDULER}\n  nodeSelector: {{kubernetes.io/hostname: {WORKERS[0]}}}\n"
        "  containers: [{name: c, image: pause, resources: {requests: {cpu: 1}}}]\n")
    report = explain_json(configured, "web-0", "--what-if", str(manifest))
    assert report["chosen"] == WORKERS[0]
    assert report["notes"] == [
        ("explained as the API server would create it: toleration node.kubernetes.io/not-ready:NoExecute for "
         "300s; toleration node.kubernetes.io/unreachable:NoExecute for 300s"),
        f"the existing pod default/web-0 (bound to {WORKERS[0]}) is left out: the manifest stands in for it"]
    proc = explain(configured, "web-1", "--what-if", str(manifest))
    assert proc.returncode == 2
    assert "metadata.name is 'web-0', not the 'web-1' given on the command line" in " ".join(proc.stderr.split())


def test_what_if_gets_what_admission_adds_at_creation(configured: Cluster, tmp_path: Path) -> None:
    """A manifest naming a RuntimeClass with pod overhead is explained with that overhead, as the API server
    creates the pod (the recorded kube-scheduler corpus's repro-whatif-overhead: without it the pod fits a
    node it does not); an unknown RuntimeClass or PriorityClass is refused with the API server's message, and
    a LimitRange, whose defaults are not applied, is named."""
    configured.server.create_object("runtimeclasses", {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                                       "metadata": {"name": "kata"}, "handler": "kata",
                                                       "overhead": {"podFixed": {"cpu": "1"}}})
    configured.server.create_object("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    manifest = tmp_path / "sandboxed.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sandboxed}\n"
        f"spec:\n  schedulerName: {SCHEDULER}\n  runtimeClassName: kata\n  priorityClassName: high\n"
        f"  nodeSelector: {{kubernetes.io/hostname: {WORKERS[0]}}}\n"
        "  containers: [{name: c, image: pause, resources: {requests: {cpu: 1500m}}}]\n")
    report = explain_json(configured, "sandboxed", "--what-if", str(manifest))
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes[WORKERS[0]]["reasons"] == ["NodeResourcesFit: Insufficient cpu"]  # 1.5 + 1 CPUs on 2
    assert report["chosen"] is None
    assert report["notes"][0] == (
        "explained as the API server would create it: priority 1000 from PriorityClass high; toleration "
        "node.kubernetes.io/not-ready:NoExecute for 300s; toleration node.kubernetes.io/unreachable:NoExecute "
        "for 300s; overhead cpu 1 from RuntimeClass kata")
    configured.server.create_object("limitranges", {"metadata": {"name": "defaults", "namespace": "default"},
                                                    "spec": {"limits": []}})
    report = explain_json(configured, "sandboxed", "--what-if", str(manifest))
    assert report["notes"][-1].startswith("LimitRange defaults in the pod's namespace may give")
    manifest.write_text(manifest.read_text().replace("runtimeClassName: kata", "runtimeClassName: gvisor"))
    proc = explain(configured, "sandboxed", "--what-if", str(manifest))
    assert proc.returncode == 2
    assert (f'{manifest}: the API server would refuse this pod: pod rejected: RuntimeClass "gvisor" not found'
            in " ".join(proc.stderr.split()))


def test_what_if_names_the_field_the_scheduler_cannot_read(configured: Cluster, tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
                        "spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: lots}}}]}\n")
    proc = explain(configured, "bad", "--what-if", str(manifest))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{manifest}: spec.containers[0].resources.requests.cpu:" in " ".join(proc.stderr.split())
    deployment = tmp_path / "deployment.yaml"
    deployment.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    proc = explain(configured, "web", "--what-if", str(deployment))
    assert proc.returncode == 2
    assert "--what-if takes one Pod manifest (apiVersion: v1, kind: Pod); got kind 'Deployment'" in " ".join(
        proc.stderr.split())


def test_an_unknown_pod_names_the_pod_and_namespace(configured: Cluster) -> None:
    proc = explain(configured, "nope", "--namespace", "team")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pod nope not found in namespace team" in " ".join(proc.stderr.split())


def test_an_unreachable_api_server_is_one_message(cluster: Cluster, tmp_path: Path) -> None:
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(cluster.kubeconfig.read_text().replace(cluster.server.url, "http://127.0.0.1:9"))
    proc = explain(cluster, "web-0", kubeconfig=dead)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot reach the API server at http://127.0.0.1:9" in " ".join(proc.stderr.split())


def test_a_plugin_the_lab_ships_is_explained_from_the_deployed_configuration(cluster: Cluster) -> None:
    """The lab ships a user's plugin folder (DiskType, unknown to kubelab): `./lab explain` loads the lab's
    plugins to read the deployed ConfigMap, and shows DiskType's verdicts and scores beside the others'."""
    import yaml

    from labdef.lab import load_lab
    from tests import user_plugin
    from tests.placement.standins import lab_data

    user_plugin.write_plugin(cluster.workdir / "plugins" / "disk_type")
    data = lab_data()
    data["scheduler"]["plugins"].append("plugins/disk_type")  # relative to the lab file
    data["scheduler"]["profile"]["plugins"]["multiPoint"]["enabled"].append({"name": user_plugin.NAME, "weight": 2})
    cluster.lab_file.write_text(yaml.safe_dump(data))
    deploy_scheduler(cluster.server, load_lab(cluster.lab_file))
    cluster.server.update_object("nodes", WORKERS[0], {"metadata": {"labels": {"example.com/disk": "ssd"}}})
    cluster.server.add_pod("wants-ssd", "default", annotations={"example.com/disk": "ssd"}, scheduler_name=SCHEDULER)
    why = explain_json(cluster, "wants-ssd")
    assert why["config_source"] == CONFIG_SOURCE and why["weights"][user_plugin.NAME] == 2
    nodes = {n["node"]: n for n in why["nodes"]}
    assert f"{user_plugin.NAME}: {user_plugin.REASON}" in nodes[WORKERS[1]]["reasons"]
    assert nodes[WORKERS[0]]["fits"] and nodes[WORKERS[0]]["scores"][user_plugin.NAME] == 200
    assert why["chosen"] == WORKERS[0]


def test_a_pod_claiming_devices_shows_each_nodes_devices(configured: Cluster) -> None:
    """The example driver's GPUs (2 per worker) and a claim holding both of worker 1's, listed from the API
    server: a pod claiming 2 more fails on worker 1 for kube-scheduler's reason, and explain's own line says
    why (both held, by which claim); worker 2 is chosen."""
    from tests.placement.dra_driver import publish
    from tests.placement.test_explain_devices import allocated
    from tests.scheduler_api.test_dra import claim

    server = configured.server
    publish(server, make_lab(), WORKERS, 2)
    held = allocated(claim("held", 2, "gpu.example.com"), WORKERS[0], ["gpu-0", "gpu-1"], "other")
    server.create_object("resourceclaims", {k: v for k, v in held.items() if k != "status"})
    server.update_object("resourceclaims", "held", {"status": held["status"]}, "default")  # as PreBind writes it
    server.create_object("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "two", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com",
                                                                        "count": 2}}]}}})
    pod = make_pod("trainer", scheduler_name=SCHEDULER, cpu="10m")
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "two"}]
    server.add_pod(pod)
    report = explain_json(configured, "trainer")
    assert report["chosen"] == WORKERS[1]
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes[WORKERS[0]]["reasons"] == ["DynamicResources: cannot allocate all claims"]
    detail = {n["node"]: n["detail"] for n in report["devices"]["nodes"]}
    assert detail[WORKERS[0]] == ("gpu.example.com: 2 devices, 2 held by claim default/held; request gpus of "
                                  "default/two wants 2 gpu.example.com: 2 match, 0 free")
    proc = explain(configured, "trainer")
    assert proc.returncode == 0, proc.stderr
    assert f"{WORKERS[0]}: {detail[WORKERS[0]]}" in proc.stdout
    assert "kubelab's detail; kube-scheduler says only \"cannot allocate all claims\"" in proc.stdout
