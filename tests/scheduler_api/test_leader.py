"""Leader election on a coordination.k8s.io/v1 Lease against the test API server."""

from __future__ import annotations

import copy
import threading
import time

import pytest

from scheduler.runtime.client import ApiError, Client, load_configuration
from scheduler.runtime.leader import LeaderElector
from scheduler.runtime.scheduler import LeaderSettings
from tests.scheduler_api.harness import SCHEDULER, running_scheduler

pytestmark = pytest.mark.api

FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.2}


def elector(kubeconfig, identity: str) -> LeaderElector:
    return LeaderElector(
        Client(load_configuration(str(kubeconfig))),
        namespace="kube-system",
        name="lab-lease",
        identity=identity,
        **FAST,
    )


def test_only_one_candidate_acquires_and_release_hands_over(kube_api, kube_api_kubeconfig) -> None:
    a, b = elector(kube_api_kubeconfig, "a"), elector(kube_api_kubeconfig, "b")
    assert a.try_acquire_or_renew() is True  # creates the Lease
    assert b.try_acquire_or_renew() is False  # held and not expired by b's clock
    assert a.try_acquire_or_renew() is True  # renew
    lease = kube_api.get_object("leases", "lab-lease", "kube-system")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 3
    a.release()
    assert b.try_acquire_or_renew() is True
    spec = kube_api.get_object("leases", "lab-lease", "kube-system")["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_expired_lease_is_taken_over(kube_api, kube_api_kubeconfig) -> None:
    now = [100.0]
    a = elector(kube_api_kubeconfig, "a")
    b = LeaderElector(
        Client(load_configuration(str(kube_api_kubeconfig))),
        namespace="kube-system",
        name="lab-lease",
        identity="b",
        clock=lambda: now[0],
        **FAST,
    )
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    now[0] += 2.9
    assert not b.try_acquire_or_renew()
    now[0] += 0.2  # 3.1 s since b saw the record change: expired by b's own clock
    assert b.try_acquire_or_renew()
    assert not a.try_acquire_or_renew()  # a now sees b's fresh record


def test_concurrent_writers_conflict(kube_api, kube_api_kubeconfig, monkeypatch) -> None:
    """Two candidates that read the same expired record: the resourceVersion precondition lets one win."""
    a, b = elector(kube_api_kubeconfig, "a"), elector(kube_api_kubeconfig, "b")
    assert a.try_acquire_or_renew()
    a.release()
    lease = kube_api.get_object("leases", "lab-lease", "kube-system")
    stale = dict(lease)
    assert b.try_acquire_or_renew()
    stale["spec"] = {**lease["spec"], "holderIdentity": "a"}
    with pytest.raises(ApiError) as err:
        a.client.put(a.path, stale)
    assert err.value.status == 409
    # The elector itself losing that race: c read the released record before b wrote (its GET answers
    # that earlier read), so its write carries a stale resourceVersion and must not take the lease.
    c = elector(kube_api_kubeconfig, "c")
    monkeypatch.setattr(c.client, "get", lambda path, query=None, timeout=30.0: copy.deepcopy(lease))
    assert c.try_acquire_or_renew() is False
    assert kube_api.get_object("leases", "lab-lease", "kube-system")["spec"]["holderIdentity"] == "b"


def test_two_instances_only_the_leader_binds(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(2)
    lease = dict(namespace="kube-system", name="my-custom-scheduler", **FAST)
    with running_scheduler(kube_api_kubeconfig, leader=LeaderSettings(identity="one", **lease)) as one:
        kube_api.wait_for(lambda: one.is_leading)
        with running_scheduler(kube_api_kubeconfig, leader=LeaderSettings(identity="two", **lease)) as two:
            kube_api.add_pods(6, cpu="100m", scheduler_name=SCHEDULER)
            kube_api.wait_for(lambda: one.scheduled_count == 6)
            assert two.scheduled_count == 0
            assert not two.is_leading
            assert two._ready()[0]  # a standby is ready: waiting is its job
            stopper = threading.Thread(target=one.stop)
            stopper.start()  # releases the lease: two takes over without waiting for expiry
            kube_api.wait_for(lambda: two.is_leading, timeout=10)
            stopper.join()
            kube_api.add_pods(3, prefix="later-", cpu="100m", scheduler_name=SCHEDULER)
            kube_api.wait_for(lambda: two.scheduled_count == 3)
            assert len(kube_api.bound_pods()) == 9
    assert kube_api.request_count("create", "pods/binding") == 9
    holder = kube_api.get_object("leases", "my-custom-scheduler", "kube-system")["spec"].get("holderIdentity")
    assert holder in ("", None)  # two released it on stop too


def test_losing_the_lease_stops_scheduling(kube_api, kube_api_kubeconfig) -> None:
    kube_api.add_nodes(1)
    lease = dict(namespace="kube-system", name="my-custom-scheduler", **FAST)
    with running_scheduler(kube_api_kubeconfig, leader=LeaderSettings(identity="one", **lease)) as one:
        kube_api.wait_for(lambda: one.is_leading)
        # Another holder takes the lease (as after a network partition the leader did not notice).
        kube_api.update_object(
            "leases",
            "my-custom-scheduler",
            {"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}},
            "kube-system",
        )
        kube_api.wait_for(lambda: not one.is_leading)
        kube_api.add_pod("while-standing-by", cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: "default/while-standing-by" in one.queue)
        assert one.scheduled_count == 0
        assert one.metrics.leader._value.get() == 0
    assert kube_api.request_count("create", "pods/binding") == 0
    holder = kube_api.get_object("leases", "my-custom-scheduler", "kube-system")["spec"]["holderIdentity"]
    assert holder == "intruder"  # a stopped standby never releases someone else's lease


def test_losing_the_lease_cancels_the_bindings_not_yet_sent(kube_api, kube_api_kubeconfig) -> None:
    """Bindings queued behind the client's rate limit when another holder takes the Lease are never sent:
    the next leader decides those pods from its own cache, so a binding sent now could over-commit."""
    kube_api.add_nodes(2)
    lease = dict(namespace="kube-system", name="my-custom-scheduler", **FAST)
    leader = LeaderSettings(identity="one", **lease)
    with running_scheduler(kube_api_kubeconfig, leader=leader, qps=5, burst=1) as one:
        kube_api.wait_for(lambda: one.is_leading)
        kube_api.add_pods(20, cpu="100m", scheduler_name=SCHEDULER)
        kube_api.wait_for(lambda: kube_api.request_count("create", "pods/binding") >= 2)
        kube_api.update_object(
            "leases",
            "my-custom-scheduler",
            {"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}},
            "kube-system",
        )
        kube_api.wait_for(lambda: not one.is_leading)
        sent = kube_api.request_count("create", "pods/binding")
        time.sleep(1.5)  # at qps 5, seven more bindings would have gone out
        assert kube_api.request_count("create", "pods/binding") <= sent + 1  # one may have been on its way
        # The cancelled ones are back in the queue, for when this instance leads again.
        kube_api.wait_for(lambda: sum(one.queue.counts().values()) == 20 - len(kube_api.bound_pods()))
