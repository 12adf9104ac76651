"""Connection faults against the real scheduler (in-process, scheduler.runtime.scheduler.Scheduler with the product's
default bounds) talking to the Kubernetes API test server (kubeapi_testserver, a stand-in for kube-apiserver and
etcd) through a fault-injecting TCP proxy (tests/faults/proxy.py, a stand-in for the network path).

Each case: every pod bound, each by exactly one binding, no node over-committed, the scheduler alive, and
recovery (from the end of the fault to the last binding) under its bound.
"""

from __future__ import annotations

import time

import pytest

from tests.faults.invariants import assert_placed_safely
from tests.scheduler_api.harness import SCHEDULER, config_with, running_scheduler

pytestmark = pytest.mark.faults

PARTITION_SECONDS = 20.0
# A silent connection must be replaced within a minute (informer.WATCH_SILENCE is 40 s after the last byte).
PARTITION_RECOVERY_BOUND = 60.0
# Reconnecting after a restart or a cut watch waits the informer's first backoffs (0.8 s, 1.6 s, ...).
RECONNECT_RECOVERY_BOUND = 20.0


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def _wait_all_bound(kube_api, names: list[str], timeout: float) -> float:
    """Seconds until every named pod is bound (TimeoutError past `timeout`)."""
    start = time.monotonic()
    wanted = {f"default/{n}" for n in names}

    def all_bound() -> bool:
        return wanted <= kube_api.bound_pods().keys()

    kube_api.wait_for(all_bound, timeout=timeout, interval=0.1)
    return time.monotonic() - start


def test_partition_then_heal_recovers_within_a_minute(kube_api, proxy, proxied_kubeconfig) -> None:
    """20 s in which every connection goes silent (no FIN, no RST), then healed: the watches that went
    silent are replaced and the pods created during and after the partition are bound well within 60 s of
    the heal; the bindings after the heal do not wait on dead pooled connections."""
    kube_api.add_nodes(4, cpu="4")
    with running_scheduler(proxied_kubeconfig, config_with()) as sched:
        kube_api.add_pods(10, prefix="before-", cpu="100m", scheduler_name=SCHEDULER)
        _wait_all_bound(kube_api, _names("before-", 10), timeout=30)
        proxy.partition()
        partitioned = time.monotonic()
        kube_api.add_pods(15, prefix="during-", cpu="100m", scheduler_name=SCHEDULER)
        time.sleep(PARTITION_SECONDS - (time.monotonic() - partitioned))
        proxy.heal()
        kube_api.add_pods(15, prefix="after-", cpu="100m", scheduler_name=SCHEDULER)
        recovery = _wait_all_bound(
            kube_api, _names("during-", 15) + _names("after-", 15), timeout=PARTITION_RECOVERY_BOUND
        )
        assert sched._healthy() == (True, "ok")
    assert_placed_safely(kube_api, _names("before-", 10) + _names("during-", 15) + _names("after-", 15))
    print(f"partition: all bound {recovery:.1f}s after the heal")
    assert recovery < PARTITION_RECOVERY_BOUND


def test_api_server_restarted_mid_burst(kube_api, proxied_kubeconfig) -> None:
    """The API server stops while bindings are under way (pods keep arriving in its store) and starts
    again on the same address: watches resume, failed bindings are retried, nothing is lost."""
    kube_api.add_nodes(4, cpu="2")
    with running_scheduler(proxied_kubeconfig, config_with(), qps=20, burst=5) as sched:
        kube_api.add_pods(60, prefix="burst-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 10)
        kube_api.stop()
        kube_api.add_pods(20, prefix="while-down-", cpu="100m", scheduler_name=SCHEDULER)
        time.sleep(3)
        kube_api.start()
        recovery = _wait_all_bound(
            kube_api, _names("burst-", 60) + _names("while-down-", 20), timeout=RECONNECT_RECOVERY_BOUND
        )
        assert sched._healthy() == (True, "ok")
    assert_placed_safely(kube_api, _names("burst-", 60) + _names("while-down-", 20))
    print(f"API server restart: all bound {recovery:.1f}s after the restart")


def test_watches_cut_and_expired_by_compaction(kube_api, proxied_kubeconfig) -> None:
    """Mid-burst every watch is cut and the history compacted: the informers' resourceVersions are gone
    (410 Expired), so they relist and reconcile; the pods created meanwhile are bound once."""
    kube_api.add_nodes(4, cpu="2")
    with running_scheduler(proxied_kubeconfig, config_with(), qps=20, burst=5) as sched:
        kube_api.add_pods(40, prefix="burst-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 10)
        kube_api.drop_watches()
        kube_api.add_pods(20, prefix="after-cut-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.compact_history()
        recovery = _wait_all_bound(
            kube_api, _names("burst-", 40) + _names("after-cut-", 20), timeout=RECONNECT_RECOVERY_BOUND
        )
        assert sched.metrics.relists.labels("pods", "expired")._value.get() >= 1
        assert sched._healthy() == (True, "ok")
    assert_placed_safely(kube_api, _names("burst-", 40) + _names("after-cut-", 20))
    print(f"watches cut + compaction: all bound {recovery:.1f}s after the cut")


def test_pod_deleted_and_recreated_under_the_same_name_mid_cycle(kube_api, proxied_kubeconfig) -> None:
    """Nodes filled exactly by the pods; while bindings queue behind the client's rate limit, pods not yet
    bound are deleted and created again under the same name: the bindings carrying the old UIDs are refused
    (409), the new pods are placed on the capacity the old ones no longer hold."""
    kube_api.add_nodes(4, cpu="1")
    names = _names("p-", 40)  # 40 x 100m = 4 x 1 cpu
    with running_scheduler(proxied_kubeconfig, config_with(), qps=10, burst=2) as sched:
        kube_api.add_pods(40, prefix="p-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 5)
        bound = kube_api.bound_pods()
        recreated = [n for n in names if f"default/{n}" not in bound][-8:]
        for name in recreated:
            kube_api.remove_pod(name)
            kube_api.add_pod(name, cpu="100m", scheduler_name=SCHEDULER)
        recreated_at = time.monotonic()
        _wait_all_bound(kube_api, names, timeout=RECONNECT_RECOVERY_BOUND)
        recovery = time.monotonic() - recreated_at
        assert sched._healthy() == (True, "ok")
    assert kube_api.request_count("create", "pods/binding", code=409) >= 1  # an old UID was refused
    assert_placed_safely(kube_api, names, recreated=recreated)
    print(f"re-created pods: all bound {recovery:.1f}s after the re-creation")
