"""The extender process's CPU per pod as kube-scheduler drives it: `python -m benchmarks.extender_process
[--a CHECKOUT] [--b CHECKOUT] [--sizes 500,5000] [--pods 1000] [--rounds 3] [--json FILE]`.

`python -m scheduler extender` runs as deployed, against the in-repo API test server (kubeapi_testserver, serving
objects of the shape kube-apiserver 1.36 sends), its node, pod and namespace informers live. No kube-scheduler
binary exists here, so a driver stands in for kube-scheduler's extender client (pkg/scheduler/extender.go,
HTTPExtender, v1.36): for each pending pod, on one kept-alive HTTP/1.1 connection, a filter and then a
prioritize POST, each an ExtenderArgs body (``{"Pod": <pod>, "Nodes": null, "NodeNames": [...]}``, the
nodeCacheCapable form; the pod as kube-scheduler's informer holds it, managedFields dropped) with the headers Go's
net/http client sends; then it binds the pod through the API server, as kube-scheduler's binder does, so the
extender's pod informer decodes every binding as it would on a cluster. The names sent are the ones
kube-scheduler would send: the first numFeasibleNodesToFind nodes (adaptive percentageOfNodesToScore) from a
start index rotating as kube-scheduler's nextStartNodeIndex does; the pod is bound to the node the extender
scores best among those its filter passed.

Reported per pod: the extender process's CPU (user + system of that process, /proc/PID/stat, as
benchmarks/scheduler_process.py reads the scheduler's) from before the first filter until its informers have
decoded the last binding (its CPU has stopped moving), and the round trip per verb as the driver saw it. With
--a and --b, each checkout's extender (with that checkout's .venv) runs against the same driver, A/B
interleaved as benchmarks/ab.py does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from benchmarks import bundled, cluster, endtoend, testserver
from benchmarks.inprocess import REPO, SCHEDULER_NAME
from benchmarks.kube_scheduler import _free_port, _wait_extender_ready, extender_config
from benchmarks.scheduler_process import cpu_seconds
from scheduler.framework.profile import num_feasible_nodes_to_find

PODS = 1000
SETTLE_QUIET = 0.5  # seconds without CPU moving (10 ms ticks) that mean the informers are done


def extender_args(pod: dict[str, Any], names: list[str]) -> bytes:
    """ExtenderArgs as kube-scheduler's json.Marshal writes it for a nodeCacheCapable extender: the Go field
    names (no JSON tags) in struct order, Nodes a nil *v1.NodeList (null), NodeNames the candidates; compact."""
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})


def go_request(verb: str, host: str, body: bytes) -> bytes:
    """The request kube-scheduler's http.Client writes for HTTPExtender.send: POST urlPrefix/verb with
    Content-Type application/json (set by send), and what Go's transport adds: Host, User-Agent,
    Content-Length, and Accept-Encoding: gzip (DisableCompression is false in extender transports)."""
    head = (f"POST /{verb} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Go-http-client/1.1\r\n"
            f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n")
    return head.encode("ascii") + body


def as_kube_scheduler_holds_it(pod: dict[str, Any]) -> dict[str, Any]:
    """kube-scheduler's pod informer drops metadata.managedFields (scheduler.go newPodInformer's transform)."""
    meta = dict(pod["metadata"])
    meta.pop("managedFields", None)
    return {**pod, "metadata": meta}


class Connection:
    """One kept-alive HTTP/1.1 connection to the extender, reading answers as Go's client does (a
    Content-Length body; anything else is an error here: the extender always sends one)."""

    def __init__(self, port: int) -> None:
        self.host = f"127.0.0.1:{port}"
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # Go's default for TCP
        self.reader = self.sock.makefile("rb")

    def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        self.sock.sendall(go_request(verb, self.host, body))
        status = self.reader.readline()
        parts = status.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise RuntimeError(f"{verb}: not an HTTP/1.1 answer: {status[:200]!r}")
        length = None
        while (line := self.reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            elif name.strip().lower() == b"connection" and value.strip().lower() == b"close":
                raise RuntimeError(f"{verb}: the extender closed the kept-alive connection")
        if length is None:
            raise RuntimeError(f"{verb}: an answer without Content-Length")
        return int(parts[1]), self.reader.read(length)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@contextlib.contextmanager
def extender_process(checkout: Path, kubeconfig: Path, timeout: float) -> Iterator[tuple[subprocess.Popen, int]]:
    """`python -m scheduler extender` from `checkout` (its .venv), listening on a free loopback port, ready."""
    port = _free_port()
    venv_python = checkout / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    folders = [checkout / "plugins" / name for name in bundled.FOLDER_NAMES]
    plugin_args = [arg for folder in folders if folder.is_dir() for arg in ("--plugins", str(folder))]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-extender-") as tmp:
        config, log = Path(tmp) / "extender.yaml", Path(tmp) / "extender.log"
        config.write_text(yaml.safe_dump(extender_config()))
        with log.open("wb") as out:
            proc = subprocess.Popen([python, "-m", "scheduler", "extender", "--config", str(config),
                                     "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}",
                                     "--log-level", "warning", *plugin_args],
                                    cwd=checkout, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            _wait_extender_ready(proc, port, log, timeout)
            yield proc, port
        finally:
            testserver.stop(proc)


def _settled_cpu(pid: int, quiet: float = SETTLE_QUIET, timeout: float = 30.0) -> float:
    last, deadline = cpu_seconds(pid), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_seconds(pid)
        if now == last:
            return now
        last = now
    return last


def run_once(checkout: Path, nodes: int, pods: int, timeout: float = 300.0) -> dict[str, Any]:
    """One extender (from `checkout`) through one fresh test server: `pods` pods filtered, prioritized, bound."""
    from scheduler.runtime.client import Client, load_configuration, pod_path

    with testserver.running_test_server() as kubeconfig:
        api = endtoend._api(kubeconfig, 8)
        run_id = f"{int(time.time())}-ext"
        namespace = f"kubelab-bench-{run_id}"
        node_names = [f"kubelab-bench-{run_id}-{i}" for i in range(nodes)]
        endtoend._drain(api.create_namespace({"metadata": {"name": namespace}}, _preload_content=False))
        endtoend._drain(api.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}},
                                                              _preload_content=False))
        endtoend._parallel(lambda name: endtoend._drain(api.create_node(cluster.node(name, run_id),
                                                                        _preload_content=False)), node_names, 8)
        endtoend._parallel(lambda name: endtoend._drain(api.patch_node(name, {"spec": {"taints": None}},
                                                                       _preload_content=False)), node_names, 8)
        endtoend._parallel(lambda i: endtoend._drain(api.create_namespaced_pod(
            namespace, cluster.pending_pod(f"pod-{i}", namespace, SCHEDULER_NAME, run_id),
            _preload_content=False)), range(pods), 8)
        client = Client(load_configuration(str(kubeconfig)), qps=0, pool_size=2)
        pending = [as_kube_scheduler_holds_it(p) for p in client.get(f"/api/v1/namespaces/{namespace}/pods")["items"]]
        with extender_process(checkout.resolve(), kubeconfig, timeout) as (proc, port):
            conn = Connection(port)
            wanted = num_feasible_nodes_to_find(None, nodes)
            start_index, spent, request_bytes = 0, {"filter": [], "prioritize": []}, 0
            time.sleep(SETTLE_QUIET)  # the informers' start-up lists are decoded
            cpu_before = _settled_cpu(proc.pid)
            t0 = time.perf_counter()
            for pod in pending:
                names = [node_names[(start_index + k) % nodes] for k in range(wanted)]
                start_index = (start_index + wanted) % nodes
                t = time.perf_counter()
                body = extender_args(pod, names)
                request_bytes += len(body)
                code, answer = conn.post("filter", body)
                spent["filter"].append(time.perf_counter() - t)
                result = orjson.loads(answer)
                if code != 200 or result.get("Error"):
                    raise RuntimeError(f"filter answered {code}: {answer[:300]!r}")
                passing = result["NodeNames"] or []
                t = time.perf_counter()
                code, answer = conn.post("prioritize", extender_args(pod, passing))
                spent["prioritize"].append(time.perf_counter() - t)
                if code != 200:
                    raise RuntimeError(f"prioritize answered {code}: {answer[:300]!r}")
                scores = orjson.loads(answer)
                best = max(scores, key=lambda s: s["Score"])["Host"] if scores else passing[0]
                meta = pod["metadata"]
                client.post(pod_path(meta["namespace"], meta["name"], "binding"), {
                    "apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
                    "target": {"kind": "Node", "name": best}}, read_answer=False)
            wall = time.perf_counter() - t0
            conn.close()
            cpu_after = _settled_cpu(proc.pid)
        client.close()
    both = sorted(f + p for f, p in zip(spent["filter"], spent["prioritize"], strict=True))
    return {"checkout": str(checkout), "nodes": nodes, "pods": pods, "names_per_request": wanted,
            "extender_cpu_ms_per_pod": round((cpu_after - cpu_before) * 1000 / pods, 3),
            "filter_p50_ms": round(statistics.median(spent["filter"]) * 1000, 3),
            "prioritize_p50_ms": round(statistics.median(spent["prioritize"]) * 1000, 3),
            "request_kib": round(request_bytes / pods / 1024, 1),
            "mean_ms": round(statistics.fmean(both) * 1000, 2), "p50_ms": round(statistics.median(both) * 1000, 2),
            "p95_ms": round(both[max(0, int(len(both) * 0.95) - 1)] * 1000, 2),
            "pods_per_second": round(pods / wall, 1)}


def report_row(run: dict[str, Any]) -> dict[str, Any]:
    """A row of `./lab benchmark`'s extender table: the round trips of both verbs per pod, and the process's
    CPU per pod."""
    return {"nodes": run["nodes"], "mode": f"process, {run['names_per_request']} names, informers live",
            "verb": "filter+prioritize", "requests": run["pods"], "request_kib": run["request_kib"],
            "mean_ms": run["mean_ms"], "p50_ms": run["p50_ms"], "p95_ms": run["p95_ms"], "decode_ms": None,
            "process_cpu_ms_per_pod": run["extender_cpu_ms_per_pod"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.extender_process", description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, help="checkout A (the baseline), e.g. /work/main; omit for B alone")
    p.add_argument("--b", type=Path, default=REPO, help="checkout B (default: this one)")
    p.add_argument("--sizes", default="500,5000", help="node counts, comma-separated")
    p.add_argument("--pods", type=int, default=PODS)
    p.add_argument("--rounds", type=int, default=1, help="A/B rounds (A then B, then B then A, ...)")
    p.add_argument("--json", type=Path, help="write every run here")
    args = p.parse_args(argv)
    sides = [("A", args.a), ("B", args.b)] if args.a else [("B", args.b)]
    for _, side in sides:
        if not (side / "scheduler" / "__main__.py").is_file():
            p.error(f"{side} is not a kubelab checkout (no scheduler/__main__.py)")
    runs: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        for i in range(args.rounds):
            for label, checkout in (sides if i % 2 == 0 else sides[::-1]):
                row = {"side": label, **run_once(checkout, size, args.pods)}
                runs.append(row)
                print(json.dumps(row), flush=True)
        medians = {label: statistics.median(r["extender_cpu_ms_per_pod"] for r in runs
                                            if r["side"] == label and r["nodes"] == size) for label, _ in sides}
        line = ", ".join(f"{label} {ms:.3f}" for label, ms in medians.items())
        change = f" ({(medians['B'] / medians['A'] - 1) * 100:+.1f}%)" if "A" in medians else ""
        print(f"{size:,} nodes: median extender CPU ms per pod {line}{change}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
