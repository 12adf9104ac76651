"""Per-request latency of the extender's filter and prioritize at 100, 1,000 and 5,000 nodes, in both
nodeCacheCapable modes: `python -m benchmarks.extender [--sizes 100,1000,5000] [--requests 20] [--json]`.

The extender (scheduler.extender.service.Extender behind the same HTTP server `python -m scheduler
extender` runs) answers over loopback HTTP on one kept-alive connection, as kube-scheduler calls it. Its cache
holds the nodes (benchmarks.cluster's scheduler_perf-like nodes, every other one labelled high-speed) and
10,000 bound pods, filled through the informer callbacks; no API server is involved. The pod asks for the
high-speed network, so filter rejects half the nodes. Each request carries every node, by name or as Node
objects (with the resourceVersion the cache holds, as when both informers are in step); it is encoded before
the clock starts, and the clock stops when the answer's last byte is read (decoding it is kube-scheduler's
cost). ``decode_ms`` is json.loads of the request body alone: the share of a request spent decoding it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import time
from typing import Any

from benchmarks import bundled, cluster
from benchmarks.inprocess import SCHEDULER_NAME, scheduler_config
from scheduler.config import parse_config
from scheduler.extender.service import Extender
from scheduler.framework import build_profiles
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from scheduler.runtime.metrics import ExtenderMetrics
from scheduler.runtime.server import HealthServer

EXISTING_PODS = 10_000
REQUESTS = 20  # timed requests per (mode, verb) row
HIGH_SPEED = {"network-topology": "high-speed"}


def _nodes(count: int) -> list[dict[str, Any]]:
    nodes = []
    for i in range(count):
        obj = cluster.node(f"node-{i}", "extender")
        obj["metadata"]["resourceVersion"] = str(i + 1)
        if i % 2 == 0:
            obj["metadata"]["labels"].update(HIGH_SPEED)
        nodes.append(obj)
    return nodes


def _pod() -> dict[str, Any]:
    pod = cluster.pending_pod("wants-speed", "bench", SCHEDULER_NAME, "extender")
    pod["metadata"].update(uid="wants-speed-uid", annotations={"my-network-preference": "high-speed"})
    return pod


def _extender(nodes: int, existing: int, seed: int,
              metrics: ExtenderMetrics) -> tuple[Extender, list[dict[str, Any]], list[str]]:
    """The extender over a cache holding `nodes` nodes and `existing` bound pods, fed through the informers'
    handlers, serving NetworkAware; the node objects and their names."""
    cache = Cache()
    handlers = CacheHandlers(cache)
    node_objects = _nodes(nodes)
    for obj in node_objects:
        handlers.node_changed(obj)
    names = [n["metadata"]["name"] for n in node_objects]
    for obj in cluster.existing_pods(existing, names, random.Random(seed)):
        handlers.pod_changed(obj)
    config = parse_config(scheduler_config(plugins=["NetworkAware"]), "config", bundled.registry())
    return Extender(cache, build_profiles(config), metrics), node_objects, names


def run_size(nodes: int, requests: int, existing: int = EXISTING_PODS, seed: int = 1) -> list[dict[str, Any]]:
    """One row per (cache mode, verb): latency figures over `requests` requests."""
    metrics = ExtenderMetrics()
    extender, node_objects, names = _extender(nodes, existing, seed, metrics)
    server = HealthServer("127.0.0.1", 0, registry=metrics.registry, healthy=lambda: (True, "ok"),
                          ready=lambda: (True, "ok"), post=extender.handle)
    server.start()
    rows = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        pod = _pod()
        bodies = {
            "names": json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
            "objects": json.dumps({"Pod": pod, "Nodes": {"metadata": {}, "items": node_objects},
                                   "NodeNames": None}).encode(),
        }
        for mode, body in bodies.items():
            decode = _median_seconds(lambda body=body: json.loads(body), 5)
            for verb in ("filter", "prioritize"):
                seconds, answer_bytes = [], 0
                for _ in range(requests + 1):  # the first warms the snapshot and the connection
                    start = time.perf_counter()
                    conn.request("POST", f"/scheduler/{verb}", body=body,
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    answer = resp.read()
                    seconds.append(time.perf_counter() - start)
                    if resp.status != 200:
                        raise RuntimeError(f"{verb} answered {resp.status}: {answer[:300]!r}")
                    answer_bytes = len(answer)
                seconds = seconds[1:]
                rows.append({
                    "nodes": nodes, "mode": "nodeCacheCapable" if mode == "names" else "Node objects",
                    "verb": verb, "requests": requests, "request_kib": round(len(body) / 1024, 1),
                    "answer_kib": round(answer_bytes / 1024, 1),
                    "mean_ms": round(statistics.fmean(seconds) * 1000, 2),
                    "p50_ms": round(statistics.median(seconds) * 1000, 2),
                    "p95_ms": round(sorted(seconds)[max(0, int(len(seconds) * 0.95) - 1)] * 1000, 2),
                    "decode_ms": round(decode * 1000, 2),
                })
        conn.close()
    finally:
        server.stop()
    return rows


def handle_cpu(nodes: int, requests: int, existing: int = EXISTING_PODS, seed: int = 1) -> dict[str, Any]:
    """The extender's own CPU per pod, without HTTP: thread CPU of ``Extender.handle`` for a filter and then
    a prioritize of the same pod by node names (nodeCacheCapable), as kube-scheduler asks for each pod, over
    `requests` pods. Uses only what the extender has long had, so another checkout's scheduler can be
    measured with this file: ``cd OTHER && PYTHONPATH=OTHER OTHER/.venv/bin/python THIS/benchmarks/extender.py
    --handle-cpu``."""
    extender, _, names = _extender(nodes, existing, seed, ExtenderMetrics())
    pods = []
    for i in range(requests + 1):  # each pod a version of its own, as kube-scheduler's pods are
        pod = _pod()
        pod["metadata"].update(uid=f"wants-speed-{i}", resourceVersion=str(100 + i))
        pods.append(json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode())
    spent = {"filter": 0.0, "prioritize": 0.0}
    for i, body in enumerate(pods):
        for verb in spent:
            start = time.thread_time()
            code, answer = extender.handle(f"/scheduler/{verb}", body)
            if i:  # the first pod warms the snapshot
                spent[verb] += time.thread_time() - start
            if code != 200:
                raise RuntimeError(f"{verb} answered {code}: {answer[:300]!r}")
    return {"nodes": nodes, "pods": requests, **{f"{verb}_cpu_ms": round(cpu * 1000 / requests, 3)
                                                  for verb, cpu in spent.items()},
            "cpu_ms_per_pod": round(sum(spent.values()) * 1000 / requests, 3)}


def _median_seconds(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.extender", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100,1000,5000", help="node counts, comma-separated")
    p.add_argument("--requests", type=int, default=REQUESTS, help="timed requests per row")
    p.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    p.add_argument("--handle-cpu", action="store_true",
                   help="instead: the extender's own CPU per pod (filter + prioritize by name, no HTTP)")
    args = p.parse_args(argv)
    if args.handle_cpu:
        for size in (int(s) for s in args.sizes.split(",")):
            print(json.dumps(handle_cpu(size, args.requests)))
        return 0
    rows = [row for size in (int(s) for s in args.sizes.split(",")) for row in run_size(size, args.requests)]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'nodes':>6} {'mode':<17} {'verb':<11} {'req KiB':>8} {'mean ms':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'decode ms':>9}")
    for r in rows:
        print(f"{r['nodes']:>6} {r['mode']:<17} {r['verb']:<11} {r['request_kib']:>8} {r['mean_ms']:>8} "
              f"{r['p50_ms']:>8} {r['p95_ms']:>8} {r['decode_ms']:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
