"""Throughput of the test server itself, with the official client (not a test; for sizing benchmarks).

    python -m kubeapi_testserver.bench_api --nodes 1000 --pods 2000 --threads 8

Creates nodes and pending pods through the API like scheduler_perf, then binds every pod from a
thread pool while one watch follows the pods, and prints requests per second for each phase.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from kubeapi_testserver.objects import make_node, make_pod
from kubeapi_testserver.server import KubeApiServer


def _rate(count: int, seconds: float) -> str:
    return f"{count} in {seconds:.2f}s = {count / seconds:,.0f}/s"


def _drain(resp: Any) -> None:
    """Read and release a _preload_content=False response so its connection goes back to the pool."""
    resp.read()
    resp.release_conn()


def run(nodes: int, pods: int, threads: int) -> dict[str, float]:
    with KubeApiServer() as server, tempfile.TemporaryDirectory() as tmp:
        cfg = client.Configuration()
        config.load_kube_config(str(server.write_kubeconfig(Path(tmp) / "kc")), client_configuration=cfg)
        cfg.connection_pool_maxsize = threads + 2
        api = client.CoreV1Api(client.ApiClient(cfg))
        results: dict[str, float] = {}

        def timed(name: str, count: int, fn: Callable[[int], None], items: Iterable[int]) -> None:
            start = time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(fn, items))
            elapsed = time.perf_counter() - start
            results[name] = count / elapsed
            print(f"{name:12s} {_rate(count, elapsed)}")

        timed("create node", nodes, lambda i: _drain(api.create_node(make_node(f"node-{i}"), _preload_content=False)),
              range(nodes))
        timed("create pod", pods, lambda i: _drain(api.create_namespaced_pod(
            "default", make_pod(f"pod-{i}", cpu="100m"), _preload_content=False)), range(pods))
        start = time.perf_counter()
        _drain(api.list_namespaced_pod("default", _preload_content=False))
        print(f"{'list pods':12s} {pods} items in {time.perf_counter() - start:.3f}s")
        rv = str(server.resource_version)
        seen = threading.Event()
        count = [0]

        def follow() -> None:
            for event in watch.Watch().stream(api.list_namespaced_pod, "default", resource_version=rv,
                                              timeout_seconds=120, deserialize=False):
                if event["type"] == "MODIFIED":
                    count[0] += 1
                    if count[0] == pods:
                        seen.set()
                        return

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        server.wait_for(lambda: server.open_watches == 1)
        timed("bind", pods, lambda i: _drain(api.create_namespaced_pod_binding(
            f"pod-{i}", "default", {"metadata": {"name": f"pod-{i}"}, "target": {"name": f"node-{i % nodes}"}},
            _preload_content=False)), range(pods))
        seen.wait(60)
        print(f"{'watch saw':12s} {count[0]} of {pods} bindings")
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    run(args.nodes, args.pods, args.threads)


if __name__ == "__main__":
    main()
