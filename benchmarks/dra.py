"""DRA end to end: pods each with one ResourceClaim of ``--devices`` devices (and, for comparison, pods without
claims) on ``--nodes`` fake nodes of the in-repo API test server, each node with one ResourceSlice of
``--per-node`` devices, placed by ``python -m scheduler`` with its default plugins (DynamicResources allocating).
Reports decisions (pods bound) per second from the first binding to the last, the scheduler's CPU per bound pod,
and whether every claim of a bound pod was allocated on its node (the API server's word).

    .venv/bin/python -m benchmarks.dra --nodes 500 --per-node 8 --pods 1000 --devices 0 1 4

Each pod binds only after the scheduler wrote its claim twice (the finalizer, then status.allocation and
status.reservedFor), so a pod with a claim costs three writes where a plain pod costs one.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import cluster, testserver
from benchmarks.endtoend import BindingWatch, watch_until_bound
from benchmarks.inprocess import SCHEDULER_NAME
from benchmarks.scheduler_process import SchedulerProcess
from scheduler.runtime.client import Client, load_configuration

RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def config() -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False}, "profiles": [{"schedulerName": SCHEDULER_NAME}]}


def device_slice(node: str, devices: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"},
                                                                   "numa": {"int": i % 2}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for i in range(devices)]}}


def _create(client: Client, nodes: int, per_node: int, pods: int, devices: int, run_id: str) -> str:
    """The nodes, their slices, the class, a namespace, its claims and the pending pods; returns the namespace."""
    client.request("POST", f"{RESOURCE}/deviceclasses", body={
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"gpu-{run_id}"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for i in range(nodes):
        name = f"dra-node-{run_id}-{i}"
        client.request("POST", "/api/v1/nodes", body=cluster.node(name, run_id))
        client.request("PATCH", f"/api/v1/nodes/{name}", body={"spec": {"taints": None}},
                       content_type="application/merge-patch+json")
        client.request("POST", f"{RESOURCE}/resourceslices", body=device_slice(name, per_node))
    namespace = f"kubelab-dra-{run_id}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    for i in range(pods):
        pod = cluster.pending_pod(f"dra-{i}", namespace, SCHEDULER_NAME, run_id)
        if devices:
            client.request("POST", f"{RESOURCE}/namespaces/{namespace}/resourceclaims", body={
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": f"dra-{i}", "namespace": namespace},
                "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                    "deviceClassName": f"gpu-{run_id}", "allocationMode": "ExactCount", "count": devices}}]}}})
            pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": f"dra-{i}"}]
            pod["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpus"}]
        client.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)
    return namespace


def run(nodes: int, per_node: int, pods: int, devices: int, timeout: float) -> dict[str, Any]:
    run_id = f"{int(time.time())}-{secrets.token_hex(3)}"
    with testserver.running_test_server() as kubeconfig:
        client = Client(load_configuration(str(kubeconfig)), qps=0, pool_size=8)
        t0 = time.perf_counter()
        namespace = _create(client, nodes, per_node, pods, devices, run_id)
        created = time.perf_counter() - t0
        watch = BindingWatch(Client(load_configuration(str(kubeconfig)), qps=0, pool_size=2), namespace, pods)
        process = SchedulerProcess(config(), kubeconfig, qps=0, burst=100)
        watch_until_bound(process, watch, timeout)
        listed = client.get(f"/api/v1/namespaces/{namespace}/pods").get("items") or []
        claims = {c["metadata"]["name"]: c for c in
                  client.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims").get("items") or []}
    bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in listed if p["spec"].get("nodeName")}
    wrong = 0
    for pod, node in bound.items() if devices else ():
        allocation = (claims.get(pod, {}).get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        if len(results) != devices or {r.get("pool") for r in results} != {node}:
            wrong += 1
    first, last = watch.first, watch.last
    seconds = (last.at - first.at) if first and last else None
    cpu = (last.cpu_seconds - first.cpu_seconds) if first and last else None
    return {"nodes": nodes, "devices_per_node": per_node, "pods": pods, "devices_per_pod": devices,
            "bound": watch.bound, "claims_not_allocated_on_the_pods_node": wrong,
            "create_seconds": round(created, 1),
            "decisions_per_second": round(watch.bound / seconds, 1) if seconds else None,
            "scheduler_cpu_ms_per_pod": round(cpu * 1000 / watch.bound, 2) if cpu is not None and watch.bound else None,
            "server": "in-repo API test server (kubeapi_testserver)"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dra", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--per-node", type=int, default=8, help="devices per node")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--devices", type=int, nargs="+", default=[0, 1, 4],
                        help="devices each pod's claim asks for, one run each (0: pods without claims)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if max(args.devices) * args.pods > args.nodes * args.per_node:
        parser.error("more devices asked for than the nodes have: every pod should fit")
    results = []
    for devices in args.devices:
        result = run(args.nodes, args.per_node, args.pods, devices, args.timeout)
        results.append(result)
        print(f"{devices} device(s)/pod: {result['decisions_per_second']} decisions/s, "
              f"{result['scheduler_cpu_ms_per_pod']} CPU ms/pod, bound {result['bound']}/{args.pods}, "
              f"claims not allocated on the pod's node: {result['claims_not_allocated_on_the_pods_node']}",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if all(r["bound"] == r["pods"] and not r["claims_not_allocated_on_the_pods_node"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
