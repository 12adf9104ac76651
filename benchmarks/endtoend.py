"""Pods bound per second end to end through an API server, and the spread of pods per node.

The way upstream scheduler_perf measures kube-scheduler, minus its in-process apiserver: create fake nodes
(status allocatable and a Ready condition, no kubelet) and a backlog of pending pods, start the real
scheduler (the `scheduler.scheduler.Scheduler` object `python -m scheduler` builds, with its own client, QPS
limiter, informers, binder pool and event writer), and time it until every pod is bound. The result is then
read back from the API server (not from the scheduler's cache): how many pods are bound, and to which node.
Everything created is deleted afterwards (pods with gracePeriodSeconds=0: no kubelet will ever confirm a
graceful delete on a fake node).

On a real cluster: every object carries the label kubelab.io/benchmark=<run id>, pods go to a namespace of
their own and select the fake nodes by that label (so no pod lands on a real node); fake nodes need create
permission on nodes (cluster-admin). A node lifecycle controller marks nodes without a kubelet NotReady after
its grace period (about 40 s), so keep runs shorter than that; DaemonSets may create pods for the fake nodes,
which the pod garbage collector removes once the nodes are deleted.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import cluster, kube_scheduler
from benchmarks.inprocess import SCHEDULER_NAME, scheduler_config, spread


class BenchmarkError(Exception):
    """The benchmark could not run; the message names what to fix."""


@dataclass
class EndToEndOptions:
    kubeconfig: Path
    nodes: int = 500
    pods: int = 2000
    qps: float = 0.0  # the scheduler's client; 0 = unthrottled (kube-scheduler's default is qps 50, burst 100)
    burst: int = 100
    plugins: list[str] = field(default_factory=list)
    percentage: int | None = None
    bind_workers: int = 16
    timeout: float = 120.0
    server_label: str = "API server from --kubeconfig"
    kube_scheduler: Path | None = None  # a kube-scheduler binary schedules instead of ours (kube_scheduler.py)
    with_extender: bool = False  # that binary asks our extender


def _api(kubeconfig: Path, threads: int) -> Any:
    from kubernetes import client

    from scheduler.client import CredentialsError, load_configuration

    try:
        cfg = load_configuration(str(kubeconfig))
    except CredentialsError as exc:
        raise BenchmarkError(f"{exc} (fix --kubeconfig)") from exc
    cfg.connection_pool_maxsize = threads + 2
    return client.CoreV1Api(client.ApiClient(cfg))


def _drain(resp: Any) -> None:
    """Read and release a _preload_content=False response so its connection goes back to the pool."""
    resp.read()
    resp.release_conn()


def _parallel(fn: Callable[[Any], Any], items: Iterable[Any], threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, items))


def _explain_api_error(exc: Exception, what: str) -> BenchmarkError:
    status = getattr(exc, "status", None)
    try:
        message = json.loads(getattr(exc, "body", "") or "{}").get("message", "")
    except ValueError:
        message = ""
    message = message or getattr(exc, "reason", "") or str(exc)
    if status in (401, 403):
        return BenchmarkError(f"{what}: {status} {message}: the benchmark creates nodes, namespaces and pods, "
                              "so the kubeconfig's user needs cluster-admin")
    return BenchmarkError(f"{what}: {status} {message}")


def run(options: EndToEndOptions, *, threads: int = 8, echo: Callable[[str], None] = lambda _: None) -> dict:
    """Create, schedule, measure, delete. Returns the result dict (see report.py for its fields)."""
    from kubernetes.client.exceptions import ApiException

    if not options.kubeconfig.exists():
        raise BenchmarkError(f"kubeconfig {options.kubeconfig} does not exist (fix --kubeconfig)")
    api = _api(options.kubeconfig, threads)
    run_id = f"{int(time.time())}-{secrets.token_hex(3)}"
    namespace = f"kubelab-bench-{run_id}"
    node_names = [f"kubelab-bench-{run_id}-{i}" for i in range(options.nodes)]
    selector = {cluster.BENCH_LABEL: run_id}
    result: dict[str, Any] = {
        "server": options.server_label, "nodes": options.nodes, "pods": options.pods,
        "qps": options.qps or "unlimited", "burst": options.burst, "bind_workers": options.bind_workers,
        "plugins": "default" + "".join(f"+{p}" for p in options.plugins),
        "percentage_of_nodes_to_score": options.percentage, "run_id": run_id,
    }
    try:
        echo(f"creating namespace {namespace}, {options.nodes} nodes and {options.pods} pending pods")
        t0 = time.perf_counter()
        try:
            _drain(api.create_namespace({"metadata": {"name": namespace, "labels": selector}},
                                        _preload_content=False))
            # API servers without a controller-manager have no default ServiceAccount to admit pods with
            # (409: one exists already; 404: the server does not serve ServiceAccounts, nor need them).
            try:
                _drain(api.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}},
                                                             _preload_content=False))
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
            _parallel(lambda name: _drain(api.create_node(cluster.node(name, run_id), _preload_content=False)),
                      node_names, threads)
            _parallel(lambda i: _drain(api.create_namespaced_pod(
                namespace, cluster.pending_pod(f"pod-{i}", namespace, SCHEDULER_NAME, run_id,
                                               node_selector=selector), _preload_content=False)),
                      range(options.pods), threads)
        except ApiException as exc:
            raise _explain_api_error(exc, "creating the benchmark's objects") from None
        result["create_seconds"] = round(time.perf_counter() - t0, 2)
        result["untaint_seconds"] = _wait_untainted(api, run_id, options.nodes, options.timeout, echo)
        if options.kube_scheduler is None:
            result.update(_schedule_and_measure(options, echo))
        else:
            result.update(kube_scheduler.measure(
                options.kube_scheduler, options.kubeconfig, namespace, options.pods,
                with_extender=options.with_extender, qps=options.qps, burst=options.burst, timeout=options.timeout,
                unbound=kube_scheduler.unbound_pods(api), echo=echo))
        result.update(_read_back(api, namespace, run_id, node_names))
    finally:
        echo(f"deleting what the benchmark created (run {run_id})")
        result["cleanup_error"] = _cleanup(api, namespace, run_id)
    return result


def _wait_untainted(api: Any, run_id: str, count: int, timeout: float, echo: Callable[[str], None]) -> float:
    """Wait until no fake node carries a NoSchedule/NoExecute taint; returns the seconds waited.

    kube-apiserver's TaintNodesByCondition admission plugin (on by default) taints every new node
    node.kubernetes.io/not-ready:NoSchedule, and the controller-manager's node lifecycle controller removes it
    once it sees the Ready condition, within seconds. Timing the scheduler before that would time retries.
    """
    start = time.perf_counter()
    announced = False
    while True:
        resp = api.list_node(label_selector=f"{cluster.BENCH_LABEL}={run_id}", _preload_content=False)
        nodes = json.loads(resp.data)["items"]
        tainted = sorted({f"{t.get('key')}:{t.get('effect')}" for n in nodes
                          for t in (n.get("spec") or {}).get("taints") or []
                          if t.get("effect") in ("NoSchedule", "NoExecute")})
        waited = time.perf_counter() - start
        if len(nodes) >= count and not tainted:
            return round(waited, 2)
        if waited > timeout:
            raise BenchmarkError(
                f"the fake nodes still carry {', '.join(tainted) or 'nothing'} ({len(nodes)} of {count} listed) "
                f"after {timeout:.0f}s: on this cluster nothing removes the taint new nodes get from the "
                "TaintNodesByCondition admission plugin (is the controller-manager running?)")
        if not announced:
            echo(f"waiting for the node lifecycle controller to lift {', '.join(tainted)} from the fake nodes")
            announced = True
        time.sleep(0.5)


def _schedule_and_measure(options: EndToEndOptions, echo: Callable[[str], None]) -> dict[str, Any]:
    from scheduler.client import Client, load_configuration
    from scheduler.config import parse_config
    from scheduler.framework import build_profiles
    from scheduler.scheduler import RuntimeSettings, Scheduler

    cfg = parse_config(scheduler_config(plugins=options.plugins, percentage=options.percentage))
    client = Client(load_configuration(str(options.kubeconfig)), qps=options.qps, burst=options.burst,
                    pool_size=options.bind_workers + 8)
    sched = Scheduler(client, build_profiles(cfg),
                      RuntimeSettings(serve=(), bind_workers=options.bind_workers, seed=1))
    echo(f"scheduling with qps {options.qps or 'unlimited'}, burst {options.burst}")
    warnings = _WarningCounter()
    logger = logging.getLogger("scheduler")
    saved = logger.propagate, logger.level
    logger.addHandler(warnings)
    logger.propagate = False  # counted and reported, not printed over the progress lines
    logger.setLevel(logging.WARNING)
    cpu0 = os.times()
    t_start = time.perf_counter()
    sched.start()
    try:
        if not sched.wait_synced(options.timeout):
            raise BenchmarkError(f"the scheduler's caches did not sync within {options.timeout:.0f}s")
        t_synced = time.perf_counter()
        deadline = t_start + options.timeout
        while sched.scheduled_count < options.pods and time.perf_counter() < deadline:
            time.sleep(0.005)
        t_done = time.perf_counter()
        cpu1 = os.times()
        bound = sched.scheduled_count
    finally:
        sched.stop()
        logger.removeHandler(warnings)
        logger.propagate, logger.level = saved
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    from_sync = t_done - t_synced
    return {
        "bound_by_scheduler": bound,
        "timed_out": bound < options.pods,
        "seconds_from_start": round(t_done - t_start, 3),
        "seconds_from_sync": round(from_sync, 3),
        "pods_per_second": round(bound / from_sync, 1) if from_sync > 0 else None,
        "pods_per_second_from_start": round(bound / (t_done - t_start), 1),
        "scheduler_cpu_seconds": round(cpu, 2),
        "events_dropped": sched.recorder.dropped,
        "scheduler_warnings": dict(warnings.counts.most_common(5)),
    }


class _WarningCounter(logging.Handler):
    """Counts the scheduler's warnings by message template (e.g. events dropped when their queue is full)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[str(record.msg)] += 1


def _read_back(api: Any, namespace: str, run_id: str, node_names: list[str]) -> dict[str, Any]:
    """What the API server says was bound where (the scheduler's own count is not the judge)."""
    pods = api.list_namespaced_pod(namespace, label_selector=f"{cluster.BENCH_LABEL}={run_id}").items
    per_node = Counter(p.spec.node_name for p in pods if p.spec.node_name)
    fake = set(node_names)
    stray = sum(n for name, n in per_node.items() if name not in fake)
    result = {"bound": sum(per_node.values()), "bound_elsewhere": stray,
              "pods_per_node": spread(per_node, node_names)}
    result["spread_within_one"] = result["pods_per_node"]["max"] - result["pods_per_node"]["min"] <= 1
    return result


def _cleanup(api: Any, namespace: str, run_id: str) -> str | None:
    selector = f"{cluster.BENCH_LABEL}={run_id}"
    problems = []
    for what, call in (
        ("pods", lambda: api.delete_collection_namespaced_pod(namespace, label_selector=selector,
                                                              grace_period_seconds=0, _preload_content=False)),
        ("nodes", lambda: api.delete_collection_node(label_selector=selector, _preload_content=False)),
        ("namespace", lambda: api.delete_namespace(namespace, _preload_content=False)),
    ):
        try:
            _drain(call())
        except Exception as exc:  # noqa: BLE001 - report every leftover, do not stop at the first
            if getattr(exc, "status", None) != 404:
                problems.append(f"{what}: {exc}")
    if problems:
        return (f"could not delete everything labelled {selector}: " + "; ".join(problems)
                + f" (delete by hand: kubectl delete nodes,pods -A -l {selector})")
    return None
