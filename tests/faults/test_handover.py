"""Leader hand-over faults: `python -m scheduler` processes (as deployed: two replicas electing a leader on
a Lease) against the Kubernetes API test server (kubeapi_testserver, a stand-in for kube-apiserver and etcd)
through the fault-injecting proxy (tests/faults/proxy.py). Real signals: SIGKILL and SIGTERM.

The Lease timings are shortened through the scheduler's own settings (leaseDuration 4s, renewDeadline 3s,
retryPeriod 500ms instead of kube-scheduler's 15s/10s/2s, tested in tests/scheduler) so a takeover after a
kill takes seconds; the client's rate limit (qps 20, burst 1) keeps a backlog of decided pods waiting
in the binder, which is what the hand-over must not bind twice or on top of the next leader's decisions.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from kubeapi_testserver.fixtures import free_port
from tests.faults.invariants import assert_placed_safely
from tests.scheduler_api.harness import SCHEDULER, scheduler_process

pytestmark = pytest.mark.faults

LEASE_DURATION = 4.0
# SIGTERM: in-flight bindings are awaited (a few at most, answered in milliseconds here), the Lease is
# released and the standby, polling every retryPeriod, takes over.
HANDOVER_RECOVERY_BOUND = 15.0
# SIGKILL: nothing is released; the standby waits for the Lease to expire by its own clock.
KILL_RECOVERY_BOUND = LEASE_DURATION + 15.0
HANDOVER_ROUNDS = 4
# Plugins a replica loads and enables: (--plugins SOURCE, plugin name).
Plugins = tuple[tuple[str, str], ...]


class Replica:
    """One `python -m scheduler` process with leader election on, its output in a file."""

    def __init__(self, tmp_path: Path, kubeconfig: Path, index: int, plugins: Plugins = ()) -> None:
        self.port = free_port()
        self.log = tmp_path / f"scheduler-{index}.log"
        config = tmp_path / f"scheduler-{index}.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": True, "leaseDuration": f"{LEASE_DURATION:.0f}s",
                               "renewDeadline": "3s", "retryPeriod": "500ms"},
            "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 20, "burst": 1},
            "profiles": [{"schedulerName": SCHEDULER,
                          "plugins": {"multiPoint": {"enabled": [{"name": name} for _, name in plugins]}}}],
            "healthzBindAddress": f"127.0.0.1:{self.port}",
            "metricsBindAddress": f"127.0.0.1:{self.port}",
        }))
        with self.log.open("w") as out:
            extra = [arg for source, _ in plugins for arg in ("--plugins", source)]
            self.proc = scheduler_process(["--config", str(config), *extra], stdout=out)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def replicas(tmp_path, proxied_kubeconfig):
    """start(plugins=()) -> a new Replica; every one still running at the end is killed."""
    started: list[Replica] = []

    def start(plugins: Plugins = ()) -> Replica:
        replica = Replica(tmp_path, proxied_kubeconfig, len(started), plugins)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.stop()


def _holder(kube_api) -> str:
    lease = kube_api.get_object("leases", SCHEDULER, "kube-system") or {}
    return (lease.get("spec") or {}).get("holderIdentity") or ""


def _leader_and_standby(kube_api, start, plugins: Plugins = ()) -> tuple[Replica, Replica]:
    leader = start(plugins)
    kube_api.wait_for(lambda: _holder(kube_api), timeout=30)
    standby = start(plugins)
    kube_api.wait_for(standby.ready, timeout=30)
    return leader, standby


def _group_nodes(kube_api, group: str, count: int = 6) -> int:
    """`count` nodes of 1 cpu that only the group's pods may take; returns how many 100m pods fill them."""
    kube_api.add_nodes(count, prefix=f"{group}-node-", cpu="1", labels={"group": group})
    return 10 * count


def _group_pods(kube_api, group: str, first: int, count: int) -> list[str]:
    names = [f"{group}-{i}" for i in range(first, first + count)]
    for name in names:
        kube_api.add_pod(name, cpu="100m", scheduler_name=SCHEDULER, node_selector={"group": group})
    return names


def _bound_count(kube_api, names: list[str]) -> int:
    bound = kube_api.bound_pods("default")
    return sum(f"default/{n}" in bound for n in names)


def _wait_all_bound(kube_api, names: list[str], timeout: float, *replicas: Replica) -> float:
    start = time.monotonic()
    try:
        kube_api.wait_for(lambda: _bound_count(kube_api, names) == len(names), timeout=timeout, interval=0.1)
    except TimeoutError:
        logs = "\n".join(r.output()[-3000:] for r in replicas)
        pytest.fail(f"{_bound_count(kube_api, names)}/{len(names)} bound after {timeout}s\n{logs}")
    return time.monotonic() - start


def test_sigterm_to_the_leader_with_a_backlog_hands_over_without_overcommitting(kube_api, replicas) -> None:
    """Four times: SIGTERM to the leader while most of a burst still waits in its binder, more pods
    arriving, on nodes the pods fill exactly. The old leader cancels what it has not sent, waits for what it has, exits 0 and
    only then releases the Lease; the standby binds the rest. Any binding from two caches would put a
    pod on a full node (over-commit) or leave one without room (never bound)."""
    leader, standby = _leader_and_standby(kube_api, replicas)
    for round_ in range(HANDOVER_ROUNDS):
        group = f"r{round_}"
        capacity = _group_nodes(kube_api, group)
        names = _group_pods(kube_api, group, 0, capacity * 2 // 3)
        kube_api.wait_for(lambda names=names: _bound_count(kube_api, names) >= 8, timeout=30)
        leader.proc.send_signal(signal.SIGTERM)
        # Pods keep coming: the next leader places them on what it believes is free.
        names += _group_pods(kube_api, group, len(names), capacity - len(names))
        recovery = _wait_all_bound(kube_api, names, HANDOVER_RECOVERY_BOUND, leader, standby)
        assert leader.proc.wait(30) == 0, leader.output()[-3000:]
        assert standby.alive, standby.output()[-3000:]
        assert_placed_safely(kube_api, names)
        print(f"SIGTERM hand-over round {round_}: all bound {recovery:.1f}s after the signal")
        leader, standby = standby, replicas()
        kube_api.wait_for(standby.ready, timeout=30)


def test_leader_killed_mid_burst_standby_takes_over(kube_api, replicas) -> None:
    """SIGKILL to the leader mid-burst: nothing is released or cancelled; the standby takes the Lease once
    it expires and binds the rest, each pod once, without over-committing a node."""
    leader, standby = _leader_and_standby(kube_api, replicas)
    names = _group_pods(kube_api, "kill", 0, _group_nodes(kube_api, "kill"))
    kube_api.wait_for(lambda: _bound_count(kube_api, names) >= 8, timeout=30)
    leader.proc.send_signal(signal.SIGKILL)
    recovery = _wait_all_bound(kube_api, names, KILL_RECOVERY_BOUND, standby)
    assert standby.alive, standby.output()[-3000:]
    assert_placed_safely(kube_api, names)
    print(f"leader killed: all bound {recovery:.1f}s after SIGKILL")
    assert "became leader" in standby.output()


QUORUM_PLUGIN = ((str(Path(__file__).with_name("quorum_plugin.py")), "Quorum"),)


def test_leader_paused_while_a_gang_waits_at_permit(kube_api, replicas) -> None:
    """Three of a four-pod gang wait at Permit in the leader (reserved, not bound) when it is paused past its
    Lease (SIGSTOP). The standby takes over, decides the three again and binds all four once the fourth
    arrives. Woken (SIGCONT), the old leader finds its Lease lost, lets its waiting pods go and stands by:
    every pod bound exactly once, by the new leader, none over-committed."""
    kube_api.add_nodes(2, prefix="q-node-", cpu="4")
    leader, standby = _leader_and_standby(kube_api, replicas, QUORUM_PLUGIN)
    labels = {"quorum": "g", "quorum-size": "4"}
    names = [f"g-{i}" for i in range(4)]
    for name in names[:3]:
        kube_api.add_pod(name, cpu="500m", scheduler_name=SCHEDULER, labels=labels)
    kube_api.wait_for(lambda: leader.output().count("waiting at Permit for Quorum") == 3, timeout=30)
    assert _bound_count(kube_api, names) == 0
    first_holder = _holder(kube_api)
    leader.proc.send_signal(signal.SIGSTOP)
    try:
        kube_api.wait_for(lambda: _holder(kube_api) not in ("", first_holder), timeout=KILL_RECOVERY_BOUND)
        kube_api.wait_for(lambda: standby.output().count("waiting at Permit for Quorum") == 3, timeout=30)
        kube_api.add_pod(names[3], cpu="500m", scheduler_name=SCHEDULER, labels=labels)
        _wait_all_bound(kube_api, names, 30, standby)
    finally:
        leader.proc.send_signal(signal.SIGCONT)
    kube_api.wait_for(lambda: "lost lease" in leader.output(), timeout=30)
    assert leader.alive and standby.alive
    assert_placed_safely(kube_api, names)
    sent = sum(1 for r in kube_api.requests if r.resource == "pods/binding" and r.name in names)
    print(f"paused leader with a gang at Permit: {sent} binding requests for the 4 pods, 4 accepted")
