"""Gang scheduling end to end: gangs of ``--size`` pods on ``--nodes`` fake nodes of the in-repo API test server,
placed by ``python -m scheduler`` with a gang plugin: examples/coscheduling and its PodGroup CRD (``--plugin
coscheduling``, the default), or the in-tree GangScheduling of the Workload API (``--plugin in-tree``: PodGroups
of scheduling.k8s.io/v1alpha2, pods naming theirs in spec.schedulingGroup, the scheduler run with
``--feature-gates GenericWorkload=true,GangScheduling=true``). Reports pods bound per second from the first
binding to the last, the scheduler's CPU per bound pod, and whether every gang was bound whole (the API
server's word, not the scheduler's).

    .venv/bin/python -m benchmarks.gangs --nodes 500 --gangs 250 --size 8 [--plugin in-tree]

Every gang fits, and the pods arrive interleaved across gangs (pod i of every gang, then pod i+1), the order in
which a scheduler without a gang queue order would hold room for many gangs at once.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from benchmarks import cluster, testserver
from benchmarks.endtoend import BindingWatch, watch_until_bound
from benchmarks.inprocess import SCHEDULER_NAME
from benchmarks.scheduler_process import SchedulerProcess
from scheduler.runtime.client import Client, load_configuration

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "coscheduling"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
WORKLOAD_PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups"
GANG_GATES = "GenericWorkload=true,GangScheduling=true"


def gang_config(plugin: str = "coscheduling") -> dict[str, Any]:
    """The default plugins plus Coscheduling, whose QueueSort replaces PrioritySort; for the in-tree plugin the
    default plugins alone (the gates add GangScheduling)."""
    if plugin == "in-tree":
        return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False}, "profiles": [{"schedulerName": SCHEDULER_NAME}]}
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SCHEDULER_NAME,
                          "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                      "queueSort": {"disabled": [{"name": "PrioritySort"}]}}}]}


def _create(client: Client, kubeconfig: Path, nodes: int, gangs: int, size: int, run_id: str,
            plugin: str = "coscheduling") -> str:
    """The CRD (for Coscheduling), the nodes, a namespace, its PodGroups and the pending pods; returns the
    namespace."""
    if plugin != "in-tree":
        for crd in yaml.safe_load_all((EXAMPLE / "crds" / "podgroup.yaml").read_text()):
            client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)
    for i in range(nodes):
        name = f"gang-node-{i}"
        client.request("POST", "/api/v1/nodes", body=cluster.node(name, run_id))
        # The not-ready taint admission puts on a new node, lifted as the node lifecycle controller would.
        client.request("PATCH", f"/api/v1/nodes/{name}", body={"spec": {"taints": None}},
                       content_type="application/merge-patch+json")
    namespace = f"kubelab-gangs-{run_id}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    for g in range(gangs):
        if plugin == "in-tree":
            client.request("POST", WORKLOAD_PODGROUPS.format(namespace=namespace), body={
                "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": size}}}})
        else:
            client.request("POST", PODGROUPS.format(namespace=namespace), body={
                "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": namespace},
                "spec": {"minMember": size, "scheduleTimeoutSeconds": 60}})
    for i in range(size):
        for g in range(gangs):
            pod = cluster.pending_pod(f"gang-{g}-{i}", namespace, SCHEDULER_NAME, run_id)
            # both: the label counts the gang below; the in-tree plugin reads spec.schedulingGroup
            pod["metadata"].setdefault("labels", {})[GROUP_LABEL] = f"gang-{g}"
            if plugin == "in-tree":
                pod["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{g}"}
            client.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)
    return namespace


def run(nodes: int, gangs: int, size: int, timeout: float, plugin: str = "coscheduling") -> dict[str, Any]:
    run_id = f"{int(time.time())}-{secrets.token_hex(3)}"
    with testserver.running_test_server() as kubeconfig:
        client = Client(load_configuration(str(kubeconfig)), qps=0, pool_size=8)
        t0 = time.perf_counter()
        namespace = _create(client, kubeconfig, nodes, gangs, size, run_id, plugin)
        created = time.perf_counter() - t0
        pods = gangs * size
        watch = BindingWatch(Client(load_configuration(str(kubeconfig)), qps=0, pool_size=2), namespace, pods)
        if plugin == "in-tree":
            process = SchedulerProcess(gang_config(plugin), kubeconfig, qps=0, burst=100,
                                       extra_args=("--feature-gates", GANG_GATES))
        else:
            process = SchedulerProcess(gang_config(), kubeconfig, qps=0, burst=100, plugin_folders=(EXAMPLE,))
        watch_until_bound(process, watch, timeout)
        listed = client.get(f"/api/v1/namespaces/{namespace}/pods").get("items") or []
    per_gang = Counter(p["metadata"]["labels"][GROUP_LABEL] for p in listed if p["spec"].get("nodeName"))
    whole = sum(1 for g in range(gangs) if per_gang.get(f"gang-{g}", 0) == size)
    partial = sum(1 for g in range(gangs) if 0 < per_gang.get(f"gang-{g}", 0) < size)
    first, last = watch.first, watch.last
    seconds = (last.at - first.at) if first and last else None
    cpu = (last.cpu_seconds - first.cpu_seconds) if first and last else None
    return {"plugin": plugin, "nodes": nodes, "gangs": gangs, "gang_size": size, "pods": pods, "bound": watch.bound,
            "gangs_whole": whole, "gangs_partly_bound": partial, "create_seconds": round(created, 1),
            "pods_per_second": round(watch.bound / seconds, 1) if seconds else None,
            "scheduler_cpu_ms_per_pod": round(cpu * 1000 / watch.bound, 2) if cpu is not None and watch.bound else None,
            "server": "in-repo API test server (kubeapi_testserver)"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gangs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gangs", type=int, default=250)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--plugin", choices=("coscheduling", "in-tree"), default="coscheduling",
                        help="the gang plugin: examples/coscheduling, or the in-tree GangScheduling (Workload API)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args.nodes, args.gangs, args.size, args.timeout, args.plugin)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")
    return 0 if result["gangs_partly_bound"] == 0 and result["bound"] == result["pods"] else 1


if __name__ == "__main__":
    sys.exit(main())
