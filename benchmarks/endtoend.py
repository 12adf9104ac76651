"""Pods bound per second end to end through an API server, and the spread of pods per node.

The way upstream scheduler_perf measures kube-scheduler, minus its in-process apiserver: create fake nodes
(status allocatable and a Ready condition, no kubelet) and a backlog of pending pods, start the real
scheduler (`python -m scheduler` in a process of its own, benchmarks/scheduler_process.py), and time it until
the API server's watch shows every pod bound. Beside the rate: the scheduler process's CPU seconds between the
first and the last binding, the requests it sent (counted by its own client, start-up lists included) and
the watch bytes it decoded, each per bound pod. The result is then read back from the API server (not from
the scheduler's cache): how many pods are bound, and to which node.
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
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import cluster, kube_scheduler
from benchmarks.inprocess import SCHEDULER_NAME, WORKLOAD_ROWS, scheduler_config, spread
from benchmarks.scheduler_process import Sample, SchedulerProcess, per_pod
from scheduler.runtime.scheduler import RuntimeSettings


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
    timeout: float = 120.0
    server_label: str = "API server from --kubeconfig"
    kube_scheduler: Path | None = None  # a kube-scheduler binary schedules instead of ours (kube_scheduler.py)
    with_extender: bool = False  # that binary asks our extender
    scheduler_checkout: Path | None = None  # run `python -m scheduler` from this checkout (benchmarks/ab.py)
    workload: str = "plain"  # what the pending pods carry (cluster.WORKLOADS); "spread" puts nodes in 3 zones,
    # "zone-affinity" in 10, "preemption" fills them with low-priority pods first (in a namespace of their own: "<namespace>-low")


def _api(kubeconfig: Path, threads: int) -> Any:
    from kubernetes import client

    from scheduler.runtime.client import CredentialsError, load_configuration

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
        "qps": options.qps or "unlimited", "burst": options.burst, "bind_workers": RuntimeSettings().bind_workers,
        "plugins": "default" + "".join(f"+{p}" for p in options.plugins) + WORKLOAD_ROWS[options.workload],
        "workload": options.workload,
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
            if options.workload == "preemption":  # admission resolves the pods' priorityClassName at create
                for name, value in ((cluster.LOW_PRIORITY, 0), (cluster.HIGH_PRIORITY, 1000)):
                    _drain(_scheduling(api).create_priority_class(cluster.priority_class(name, value, run_id),
                                                                  _preload_content=False))
            _parallel(lambda i: _drain(api.create_node(cluster.node(
                node_names[i], run_id, zone=cluster.zone_of(options.workload, i)),
                _preload_content=False)), range(options.nodes), threads)
            _parallel(lambda i: _drain(api.create_namespaced_pod(
                namespace, cluster.pending_pod(f"pod-{i}", namespace, SCHEDULER_NAME, run_id,
                                               node_selector=selector, workload=options.workload, index=i),
                _preload_content=False)), range(options.pods), threads)
            if options.workload == "preemption":
                _create_victims(api, namespace, node_names, run_id, threads)
        except ApiException as exc:
            raise _explain_api_error(exc, "creating the benchmark's objects") from None
        result["create_seconds"] = round(time.perf_counter() - t0, 2)
        _parallel(lambda name: _drain(api.patch_node(name, {"spec": {"taints": None}}, _preload_content=False)),
                  node_names, threads)
        result["untaint_seconds"] = _wait_untainted(api, run_id, options.nodes, options.timeout, echo)
        if options.kube_scheduler is None:
            result.update(_schedule_and_measure(options, namespace, echo))
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


def _create_victims(api: Any, namespace: str, node_names: list[str], run_id: str, threads: int) -> None:
    """The preemption workload's victims: every node full of bound low-priority pods, in a namespace of their
    own (the scheduler has not started yet)."""
    low = f"{namespace}-low"
    _drain(api.create_namespace({"metadata": {"name": low, "labels": {cluster.BENCH_LABEL: run_id}}},
                                _preload_content=False))
    victims = [(f"low-{i}-{k}", node) for i, node in enumerate(node_names) for k in range(cluster.VICTIMS_PER_NODE)]
    _parallel(lambda v: _drain(api.create_namespaced_pod(low, cluster.low_priority_pod(v[0], low, v[1], run_id),
                                                         _preload_content=False)), victims, threads)


def _wait_untainted(api: Any, run_id: str, count: int, timeout: float, echo: Callable[[str], None]) -> float:
    """Wait until no fake node carries a NoSchedule/NoExecute taint; returns the seconds waited.

    kube-apiserver's TaintNodesByCondition admission plugin (on by default) taints every new node
    node.kubernetes.io/not-ready:NoSchedule, and the controller-manager's node lifecycle controller removes it
    once it sees the Ready condition, within seconds. The benchmark lifts it itself first (a merge patch of
    spec.taints to null, as the recorded traffic in ../shared/reference/kube-apiserver-v1.36.2/ does), so a
    server without a controller-manager (the API test server) serves schedulable nodes too; a node lifecycle
    controller that disagrees puts it back, and this wait then reports it. Timing the scheduler before that
    would time retries.
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


def _schedule_and_measure(options: EndToEndOptions, namespace: str, echo: Callable[[str], None]) -> dict[str, Any]:
    """Run `python -m scheduler` in its own process until every pod is bound (as the API server's watch
    shows it); its CPU between the first and the last binding, and every request it sent, per bound pod."""
    from scheduler.runtime.client import Client, load_configuration

    config = scheduler_config(plugins=options.plugins, percentage=options.percentage)
    watcher = BindingWatch(Client(load_configuration(str(options.kubeconfig)), qps=0, pool_size=2),
                            namespace, options.pods)
    process = SchedulerProcess(config, options.kubeconfig, qps=options.qps, burst=options.burst,
                               checkout=options.scheduler_checkout)
    echo(f"scheduling with python -m scheduler (pid in its own process), qps {options.qps or 'unlimited'}, "
         f"burst {options.burst}")
    watcher.start(process.sample)
    t_start = time.perf_counter()
    process.start()
    try:
        if not process.wait_ready(options.timeout):
            raise BenchmarkError(f"the scheduler's caches did not sync within {options.timeout:.0f}s: "
                                 f"{process.log_tail()}")
        t_synced = time.perf_counter()
        deadline = t_start + options.timeout
        while not watcher.done.wait(0.05) and time.perf_counter() < deadline:
            process.check_running()
        if watcher.error is not None:
            raise BenchmarkError(f"watching the bindings failed: {watcher.error}")
        t_done = watcher.last.at if watcher.last else time.perf_counter()
        end = process.settled_sample()
        warnings = process.warnings()
    except RuntimeError as err:
        raise BenchmarkError(str(err)) from None
    finally:
        watcher.stop()
        process.stop()
    bound = watcher.bound
    first, last = watcher.first, watcher.last or end
    cpu = last.cpu_seconds - first.cpu_seconds if first else 0.0
    from_sync = t_done - t_synced
    return {
        "bound_by_scheduler": bound,
        "timed_out": bound < options.pods,
        "seconds_from_start": round(t_done - t_start, 3),
        "seconds_from_sync": round(from_sync, 3),
        "pods_per_second": round(bound / from_sync, 1) if from_sync > 0 and bound else None,
        "pods_per_second_from_start": round(bound / (t_done - t_start), 1) if bound else None,
        "scheduler_cpu_seconds": round(cpu, 2),
        "scheduler_cpu_ms_per_pod": round(cpu * 1000 / bound, 3) if bound else None,
        "scheduler_cpu_seconds_to_last_binding": round(last.cpu_seconds, 2),
        # From the first binding until the writes it caused have settled (the Scheduled events trail the
        # bindings): every pod's whole cost, so a scheduler that leaves its events for later gains nothing.
        "scheduler_cpu_ms_per_pod_settled": round((end.cpu_seconds - first.cpu_seconds) * 1000 / bound, 3)
        if first and bound else None,
        "requests_per_pod": per_pod({}, end.requests, bound),
        "watch_bytes_per_pod": per_pod({}, end.watch_bytes, bound),
        "answer_bytes_per_pod": per_pod({}, end.answer_bytes, bound),
        # Everything the scheduler decoded (watch events, and lists and answers), start-up lists included.
        "decoded_bytes_per_pod": round((sum(end.watch_bytes.values()) + sum(end.answer_bytes.values()))
                                       / bound) if bound else None,
        "events_dropped": int(end.events_dropped),
        "scheduler_warnings": dict(warnings.most_common(5)),
    }


class BindingWatch:
    """Watches the benchmark's pods through the API server (not the scheduler's word) and samples the
    scheduler process when the first and when the last of them is seen bound."""

    def __init__(self, client: Any, namespace: str, pods: int) -> None:
        self.client = client
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self.pods = pods
        self.bound = 0
        self.first: Sample | None = None
        self.last: Sample | None = None
        self.error: Exception | None = None
        self.done = threading.Event()
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._response: Any = None
        self._thread: threading.Thread | None = None

    def start(self, sample: Callable[[], Sample]) -> None:
        listed = self.client.get(self.path)
        for pod in listed.get("items") or []:
            self._note(pod, sample)
        rv = (listed.get("metadata") or {}).get("resourceVersion", "")
        self._thread = threading.Thread(target=self._run, args=(rv, sample), name="bench-bindings", daemon=True)
        self._thread.start()

    def _run(self, rv: str, sample: Callable[[], Sample]) -> None:
        try:
            while not self._stop.is_set() and not self.done.is_set():
                query = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": 60}
                for event in self.client.watch_lines(self.path, query, read_timeout=90,
                                                     on_open=lambda r: setattr(self, "_response", r)):
                    obj = event.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._note(obj, sample)
                    if self.done.is_set() or self._stop.is_set():
                        return
        except Exception as exc:  # noqa: BLE001 - reported by the caller, which stops waiting
            if not self._stop.is_set():
                self.error = exc
                self.done.set()

    def _note(self, pod: dict[str, Any], sample: Callable[[], Sample]) -> None:
        name = (pod.get("metadata") or {}).get("name", "")
        if not (pod.get("spec") or {}).get("nodeName") or name in self._seen:
            return
        self._seen.add(name)
        self.bound = len(self._seen)
        if self.bound == 1:
            self.first = sample()
        if self.bound >= self.pods:
            self.last = sample()
            self.done.set()

    def stop(self) -> None:
        self._stop.set()
        resp = self._response
        if resp is not None:
            try:
                resp.shutdown()
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
        self.client.close()


def watch_until_bound(process: SchedulerProcess, watch: BindingWatch, timeout: float) -> None:
    """Start ``process`` with ``watch`` sampling it, wait until every watched pod is bound or ``timeout``
    passes (the process must keep running), then stop both."""
    watch.start(lambda: process.sample())
    process.start()
    try:
        if not process.wait_ready(timeout):
            raise SystemExit(f"the scheduler did not sync within {timeout:.0f}s: {process.log_tail()}")
        deadline = time.monotonic() + timeout
        while not watch.done.wait(0.1) and time.monotonic() < deadline:
            process.check_running()
    finally:
        watch.stop()
        process.stop()


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


def _scheduling(api: Any) -> Any:
    from kubernetes import client

    return client.SchedulingV1Api(api.api_client)


def _cleanup(api: Any, namespace: str, run_id: str) -> str | None:
    selector = f"{cluster.BENCH_LABEL}={run_id}"
    problems = []
    for what, call in (
        ("pods", lambda: api.delete_collection_namespaced_pod(namespace, label_selector=selector,
                                                              grace_period_seconds=0, _preload_content=False)),
        ("nodes", lambda: api.delete_collection_node(label_selector=selector, _preload_content=False)),
        ("namespace", lambda: api.delete_namespace(namespace, _preload_content=False)),
        ("preemption victims' namespace", lambda: api.delete_namespace(f"{namespace}-low", _preload_content=False)),
        ("priority classes", lambda: _scheduling(api).delete_collection_priority_class(
            label_selector=selector, _preload_content=False)),
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
