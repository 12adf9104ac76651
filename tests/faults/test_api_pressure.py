"""The API server pushing back during a burst, against the real scheduler (in-process) and the Kubernetes API
test server (kubeapi_testserver, a stand-in for kube-apiserver): throttling (429 with Retry-After, as API
Priority and Fairness answers) and nodes deleted while pods are being placed. Every pod is bound once and no
node is over-committed."""

from __future__ import annotations

import time

import pytest

from tests.faults.invariants import assert_placed_safely
from tests.scheduler_api.harness import SCHEDULER, config_with, running_scheduler

pytestmark = pytest.mark.faults

BURST = 300


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def test_throttled_mid_burst_binds_every_pod_once(kube_api, kube_api_kubeconfig) -> None:
    """150 of the burst's writes (bindings, events, condition patches) are answered 429 TooManyRequests with
    Retry-After 1, as API Priority and Fairness answers a client over its share: every throttled binding is
    retried with backoff and every pod is bound once."""
    kube_api.add_nodes(4, cpu="8")
    names = _names("p-", BURST)
    with running_scheduler(kube_api_kubeconfig, config_with(), qps=100, burst=10) as sched:
        kube_api.add_pods(BURST, prefix="p-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 30)
        kube_api.fail_next(150, 429, method="POST", retry_after=1,
                           message="too many requests, please try again later.")
        start = time.monotonic()
        kube_api.wait_for(lambda: {f"default/{n}" for n in names} <= kube_api.bound_pods().keys(),
                          timeout=60, interval=0.1)
        elapsed = time.monotonic() - start
        assert sched._healthy() == (True, "ok")
    throttled = kube_api.request_count("create", "pods/binding", code=429)
    assert throttled >= 1
    assert_placed_safely(kube_api, names)
    print(f"throttled: {throttled} bindings answered 429, all {BURST} bound {elapsed:.1f}s after throttling began")


def test_nodes_deleted_mid_burst(kube_api, kube_api_kubeconfig) -> None:
    """6 of 20 nodes are deleted while a burst is placed: once the scheduler has seen them go, no pod is
    placed on them, and every pod is bound once on the nodes that are left."""
    kube_api.add_nodes(20, cpu="8")
    gone = [f"node-{i}" for i in range(0, 20, 3)][:6]
    first, second = _names("a-", BURST // 2), _names("b-", BURST // 2)
    with running_scheduler(kube_api_kubeconfig, config_with(), qps=100, burst=10) as sched:
        kube_api.add_pods(len(first), prefix="a-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 30)
        for node in gone:
            kube_api.remove_node(node)
        kube_api.wait_for(lambda: all(sched.cache.node(n) is None for n in gone))
        kube_api.add_pods(len(second), prefix="b-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: {f"default/{n}" for n in first + second} <= kube_api.bound_pods().keys(),
                          timeout=60, interval=0.1)
        assert sched._healthy() == (True, "ok")
    bound = kube_api.bound_pods("default")
    on_gone = sorted(n for n in second if bound[f"default/{n}"] in gone)
    assert not on_gone, f"pods created after the deletion placed on deleted nodes: {on_gone[:10]}"
    assert_placed_safely(kube_api, first + second)
    late = sum(1 for n in first if bound[f"default/{n}"] in gone)
    print(f"nodes deleted: {late} pods decided before the deletion were bound to a deleted node, "
          f"none of the {len(second)} created after it")
