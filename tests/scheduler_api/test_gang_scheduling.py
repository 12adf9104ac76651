"""kube-scheduler 1.36's GangScheduling in `python -m scheduler --feature-gates GenericWorkload=true,GangScheduling=true`
against the API test server serving the Workload API (scheduling.k8s.io/v1alpha2): a gang that fits is bound
whole and its PodGroup marked Scheduled; one too big binds nothing, its pods get kube-scheduler's messages and
its PodGroup is marked Unschedulable. The sizes, messages and condition are those of the recorded
kube-scheduler gangs (tests/gang_corpus.py replays them in-process)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver.fixtures import free_port
from kubeapi_testserver.objects import make_pod
from tests.scheduler_api.harness import SCHEDULER, scheduler_process

pytestmark = pytest.mark.api

GATES = "GenericWorkload=true,GangScheduling=true"


def _config(tmp_path: Path, kubeconfig: str) -> Path:
    port = free_port()
    path = tmp_path / "config.yaml"
    path.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
clientConnection: {{kubeconfig: {kubeconfig}}}
healthzBindAddress: 127.0.0.1:{port}
metricsBindAddress: 127.0.0.1:{port}
profiles:
  - schedulerName: {SCHEDULER}
    plugins:
      postFilter:
        disabled: [{{name: DefaultPreemption}}]
""")
    return path


def _gang(kube_api: Any, name: str, size: int, cpu: str) -> list[str]:
    kube_api.create_object("workloads", {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": size}}}]}})
    kube_api.create_object("podgroups", {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"podGroupTemplateRef": {"workload": {"workloadName": name, "podGroupTemplateName": "workers"}},
                 "schedulingPolicy": {"gang": {"minCount": size}}}})
    names = [f"{name}-w{i}" for i in range(size)]
    for pod in names:
        obj = make_pod(pod, cpu=cpu, memory="128Mi", scheduler_name=SCHEDULER)
        obj["spec"]["schedulingGroup"] = {"podGroupName": name}
        kube_api.add_pod(obj)
    return names


def _condition(kube_api: Any, name: str) -> tuple[str, str, str] | None:
    group = kube_api.get_object("podgroups", name, "default") or {}
    for c in (group.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodGroupScheduled":
            return c["status"], c["reason"], c.get("message", "")
    return None


def _pod_scheduled(kube_api: Any, name: str) -> str | None:
    pod = kube_api.get_object("pods", name, "default") or {}
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message")
    return None


def test_a_gang_that_fits_is_bound_whole_and_one_too_big_binds_none(kube_api, kube_api_kubeconfig, tmp_path):
    kube_api.add_nodes(3, prefix="n-", cpu="4")
    proc = scheduler_process(["--config", str(_config(tmp_path, str(kube_api_kubeconfig))), "--feature-gates", GATES])
    try:
        fits = _gang(kube_api, "fits", 4, "2")  # 3 nodes x 4 cpu: room for 6 such pods
        kube_api.wait_for(lambda: len([n for n in fits if f"default/{n}" in kube_api.bound_pods()]) == 4)
        kube_api.wait_for(lambda: _condition(kube_api, "fits") == ("True", "Scheduled", ""))
        # 2 pods of 2 cpu fit beside the first gang; 4 do not: kube-scheduler's gang_partial
        big = _gang(kube_api, "big", 4, "2")
        kube_api.wait_for(lambda: _condition(kube_api, "big") == ("False", "Unschedulable",
                                                                   "pod group is unschedulable"))
        kube_api.wait_for(lambda: all(_pod_scheduled(kube_api, n) for n in big))
        messages = sorted(_pod_scheduled(kube_api, n) for n in big)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert not [n for n in big if f"default/{n}" in kube_api.bound_pods()]
    waiting = ("pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more "
               "plugins asked to wait and no plugin rejected pod")
    no_room = "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate"
    assert messages == sorted([waiting] * 2 + [no_room] * 2), out


def test_an_unknown_gate_is_refused_at_start(kube_api, kube_api_kubeconfig, tmp_path):
    proc = scheduler_process(["--config", str(_config(tmp_path, str(kube_api_kubeconfig))),
                              "--feature-gates", "GangSchedulng=true"])
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "GangSchedulng" in out and "did you mean GangScheduling?" in out
