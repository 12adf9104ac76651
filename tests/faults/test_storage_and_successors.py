"""Storage failing behind a running API server, and pods re-created under the same name, against the real
scheduler (in-process, scheduler.runtime.scheduler.Scheduler) and the Kubernetes API test server
(kubeapi_testserver, a stand-in for kube-apiserver and etcd).

The server's storage_outage() answers as kube-apiserver does while etcd is down; its before_next() hook runs
an action just before a request is served, which forces the ordering that makes a race lose every time.
Every case ends with every pod bound, each by exactly one binding, and no node over-committed.
"""

from __future__ import annotations

import random
import time

import pytest

from tests.faults.invariants import assert_placed_safely, binds_per_pod
from tests.scheduler_api.harness import SCHEDULER, config_with, pod_condition, pod_events, running_scheduler

pytestmark = pytest.mark.faults

BURST = 240
OUTAGE_SECONDS = 3.0
# After the outage ends, failed bindings wait out their backoff (1 s doubling to 10 s) before the retry.
RECOVERY_TIMEOUT = 60.0


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def _all_bound(kube_api, names: list[str]):
    wanted = {f"default/{n}" for n in names}

    def all_bound() -> bool:
        return wanted <= kube_api.bound_pods().keys()

    return all_bound


def _fail_bindings_with_5xx(kube_api) -> None:
    """Server errors without storage being down: the API server's own answers when it cannot serve."""
    kube_api.fail_next(40, 503, resource="pods/binding", message="the server is currently unable to handle the request")
    kube_api.fail_next(40, 504, resource="pods/binding", reason="Timeout",
                       message="Timeout: request did not complete within requested timeout - context deadline exceeded")


@pytest.mark.parametrize("fault", ["etcd-unavailable", "5xx", "hang"])
def test_storage_outage_mid_burst_binds_every_pod_once(kube_api, kube_api_kubeconfig, fault) -> None:
    """A burst is under way when storage fails for a few seconds: "etcd-unavailable" answers bindings 409
    Conflict with the etcd client's error ("rpc error: code = Unavailable") and everything else 500;
    "5xx" answers bindings 503 and 504; "hang" holds every request until storage is back. A binding that
    failed is judged by the pod: it is still unassigned, so it is retried, and every pod is bound once."""
    kube_api.add_nodes(4, cpu="8")
    names = _names("p-", BURST)
    with running_scheduler(kube_api_kubeconfig, config_with(), qps=80, burst=10) as sched:
        kube_api.add_pods(BURST, prefix="p-", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) >= 40)
        if fault == "5xx":
            _fail_bindings_with_5xx(kube_api)
        else:
            kube_api.storage_outage("hang" if fault == "hang" else "unavailable")
        time.sleep(OUTAGE_SECONDS)
        kube_api.storage_restored()
        kube_api.clear_failures()
        restored = time.monotonic()
        kube_api.wait_for(_all_bound(kube_api, names), timeout=RECOVERY_TIMEOUT, interval=0.1)
        recovery = time.monotonic() - restored
        assert sched._healthy() == (True, "ok")
    refused = sum(1 for r in kube_api.requests if r.resource == "pods/binding" and r.code != 201)
    assert_placed_safely(kube_api, names)
    if fault != "hang":
        assert refused >= 1  # the outage did meet bindings
    print(f"storage {fault}: {refused} bindings refused, all {BURST} bound {recovery:.1f}s after the end")


def test_condition_for_a_deleted_pod_never_lands_on_its_successor(kube_api, kube_api_kubeconfig) -> None:
    """An unschedulable pod is deleted and a pod of the same name that fits is created, and bound, before
    the scheduler's PodScheduled=False patch about the old pod reaches the server (the ordering is forced):
    the patch carries the old pod's UID and is refused, so the new pod does not carry the old one's
    condition. The FailedScheduling event names the old pod's UID."""
    kube_api.add_node("n1", cpu="2")
    old = kube_api.add_pod("twin", cpu="4", scheduler_name=SCHEDULER)

    def replace_and_bind(record) -> None:
        kube_api.remove_pod("twin")
        kube_api.add_pod("twin", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/twin" in kube_api.bound_pods(), timeout=20)

    kube_api.before_next(1, replace_and_bind, method="PATCH", resource="pods/status", path="/pods/twin/status$")
    with running_scheduler(kube_api_kubeconfig, config_with()) as sched:
        kube_api.wait_for(lambda: any(r.code for r in kube_api.requests
                                      if r.resource == "pods/status" and r.path.endswith("/twin/status")))
        sched.recorder.flush()
    new = kube_api.get_object("pods", "twin", "default")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    condition = pod_condition(kube_api, "twin")
    assert condition is not None and condition["status"] == "True", condition
    assert binds_per_pod(kube_api)["twin"] == 1
    failed = pod_events(kube_api, "twin", "FailedScheduling")
    assert failed and {e["involvedObject"]["uid"] for e in failed} == {old["metadata"]["uid"]}


def test_binding_for_a_deleted_pod_never_lands_on_its_successor(kube_api, kube_api_kubeconfig) -> None:
    """A pod is deleted and re-created under the same name, with a nodeSelector the first decision's node
    does not match, just before the binding decided for the old pod is served (forced): that binding is
    refused (its UID no longer matches), the decision is dropped, and the new pod is decided and bound on
    a node it selects."""
    kube_api.add_node("n1", cpu="2", labels={"zone": "a"})
    kube_api.add_node("n2", cpu="2", labels={"zone": "b"})

    def replace(record) -> None:
        kube_api.remove_pod("twin")
        kube_api.add_pod("twin", cpu="100m", scheduler_name=SCHEDULER, node_selector={"zone": "b"})

    kube_api.before_next(1, replace, resource="pods/binding")
    with running_scheduler(kube_api_kubeconfig, config_with()):
        kube_api.add_pod("twin", cpu="100m", scheduler_name=SCHEDULER, node_selector={"zone": "a"})
        kube_api.wait_for(lambda: "default/twin" in kube_api.bound_pods(), timeout=20)
    assert kube_api.bound_pods()["default/twin"] == "n2"
    assert kube_api.request_count("create", "pods/binding", code=409) == 1
    assert binds_per_pod(kube_api)["twin"] == 1


SUCCESSOR_ROUNDS = 50


def test_same_name_successor_rounds(kube_api, kube_api_kubeconfig) -> None:
    """50 rounds of: a pod that fits nowhere is created, deleted 0-150 ms later, and a pod of the same name
    that fits is created 0-150 ms after that. Every PodScheduled patch the scheduler sends is held until a
    pod of its name is bound, so each one about a deleted pod meets the bound successor (the race lost
    every time). Every successor is bound once and none carries a condition written about its predecessor."""
    kube_api.add_nodes(4, cpu="4")
    rng = random.Random(31)
    names = _names("twin-", SUCCESSOR_ROUNDS)

    def hold_until_a_pod_of_its_name_is_bound(record) -> None:
        try:
            kube_api.wait_for(lambda: f"default/{record.name}" in kube_api.bound_pods(), timeout=5)
        except TimeoutError:
            pass  # its successor is not there yet (or never was): let it through

    kube_api.before_next(10 * SUCCESSOR_ROUNDS, hold_until_a_pod_of_its_name_is_bound, method="PATCH",
                         resource="pods/status")
    with running_scheduler(kube_api_kubeconfig, config_with()) as sched:
        for name in names:
            kube_api.add_pod(name, cpu="8", scheduler_name=SCHEDULER)
            time.sleep(rng.uniform(0, 0.15))
            kube_api.remove_pod(name)
            time.sleep(rng.uniform(0, 0.15))
            kube_api.add_pod(name, cpu="100m", scheduler_name=SCHEDULER)
        start = time.monotonic()
        kube_api.wait_for(_all_bound(kube_api, names), timeout=30, interval=0.1)
        last = time.monotonic() - start
        kube_api.wait_for(lambda: all(r.code for r in kube_api.requests if r.resource == "pods/status"))
        sched.recorder.flush()
    patches = [r for r in kube_api.requests if r.resource == "pods/status" and r.method == "PATCH"]
    assert patches  # the race was run: some predecessors were decided before they were deleted
    stale = {n: c for n in names if (c := pod_condition(kube_api, n)) and c["status"] != "True"}
    assert not stale, f"{len(stale)} successors carry a predecessor's condition: {sorted(stale)[:5]}"
    assert_placed_safely(kube_api, names, recreated=names)
    refused = sum(1 for r in patches if r.code == 422)
    print(f"same-name successors: {SUCCESSOR_ROUNDS} rounds, {len(patches)} condition patches about a "
          f"predecessor ({refused} refused by the successor), last bound {last:.1f}s after the last round")
