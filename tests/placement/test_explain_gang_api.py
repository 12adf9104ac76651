"""`./lab explain` on the gang scheduler of examples/coscheduling, end to end: the lab ships the example's
folder and enables it, deploy-scheduler's ConfigMap and the real scheduler process run against the API test
server (tests/placement/standins.py), with the PodGroup CRD the folder brings. A member of a gang not yet
complete is explained as gated at PreEnqueue with the plugin's reason; a member the scheduler has placed and
holds at Permit is explained as waiting there: inferred by the what-if, and said to be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster
from tests.placement.gang import add_member, gang_cluster, podgroup  # noqa: F401
from tests.placement.standins import WORKERS

pytestmark = pytest.mark.api

def explain_json(cluster: Cluster, name: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "invoke", "explain", name, "--json", "--lab", str(cluster.lab_file),
           "--kubeconfig", str(cluster.kubeconfig)]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env={**os.environ, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def explain_text(cluster: Cluster, name: str) -> str:
    cmd = [sys.executable, "-m", "invoke", "explain", name, "--lab", str(cluster.lab_file),
           "--kubeconfig", str(cluster.kubeconfig)]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env={**os.environ, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return " ".join(proc.stdout.split())


def test_a_member_of_an_incomplete_gang_is_explained_as_gated(gang_cluster: Any) -> None:  # noqa: F811
    cluster, _ = gang_cluster
    cluster.server.create_object("podgroups.scheduling.x-k8s.io", podgroup("train", 3, 30))
    add_member(cluster, "train-0", "train")
    add_member(cluster, "train-1", "train")
    report = explain_json(cluster, "train-0")
    assert report["outcome"] == "gated"
    assert report["points"]["point"] == "PreEnqueue" and report["points"]["plugin"] == "Coscheduling"
    assert report["points"]["reason"] == "PodGroup default/train has 2 of its minMember 3 pods"
    assert report["message"].startswith("gated at PreEnqueue by Coscheduling: PodGroup default/train has 2 of")
    assert report["likely_state"] == "gated at PreEnqueue by Coscheduling, out of the scheduler's active queue"
    assert report["inferred"].startswith("inferred, not read")
    assert cluster.server.get_object("pods", "train-0", "default")["spec"].get("nodeName") is None
    text = explain_text(cluster, "train-0")
    assert "scheduler's verdict now: gated at PreEnqueue by Coscheduling" in text
    assert "likely now: gated at PreEnqueue by Coscheduling" in text


def test_a_placed_member_held_at_permit_is_explained_as_waiting(gang_cluster: Any) -> None:  # noqa: F811
    """A gang of three whose third member is held back by a scheduling gate (it counts as a member, and the
    scheduler does not try it): the scheduler places the other two and holds them at Permit. Explained from
    outside, each is unbound and the scheduler's own plugins would hold it at Permit: "reserved on <node>,
    waiting at Permit for Coscheduling", said to be inferred; the gated third member is explained as gated by
    its scheduling gate, which is read from its spec."""
    cluster, standin = gang_cluster
    cluster.server.create_object("podgroups.scheduling.x-k8s.io", podgroup("big", 3, 120))
    add_member(cluster, "big-2", "big", schedulingGates=[{"name": "example.com/quota"}])
    add_member(cluster, "big-0", "big")
    add_member(cluster, "big-1", "big")
    cluster.server.wait_for(lambda: "reserved on" in standin.process.log()
                            and standin.process.log().count("waiting at Permit for Coscheduling") >= 2, timeout=30)
    for name in ("big-0", "big-1"):
        assert cluster.server.get_object("pods", name, "default")["spec"].get("nodeName") is None
    report = explain_json(cluster, "big-0")
    assert report["outcome"] == "would_wait", report["message"]
    node = report["points"]["node"]
    assert node in WORKERS
    assert report["points"]["waits"] == [{"plugin": "Coscheduling", "timeout": 120.0,
                                          "reason": "PodGroup default/big has 1 of its minMember 3 pods placed"}]
    assert report["likely_state"] == f"reserved on {node}, waiting at Permit for Coscheduling"
    assert report["inferred"].startswith("inferred, not read: the pod is not bound")
    assert report["read_from"] is None
    assert report["notes"][-1].startswith("the scheduler's log (pod kube-system/my-custom-scheduler-standin) cannot "
                                          "be read: ") and report["notes"][-1].endswith(": the Permit wait is inferred")
    text = explain_text(cluster, "big-0")
    assert f"would choose {node}" in text
    assert "reserved there, it would wait at Permit for Coscheduling (up to 120s)" in text
    assert "likely now: reserved on" in text and "inferred, not read" in text
    gated = explain_json(cluster, "big-2")
    assert gated["outcome"] == "gated" and gated["points"]["plugin"] == "SchedulingGates"
    assert gated["points"]["reason"] == "waiting for scheduling gates: [example.com/quota]"
    assert gated["likely_state"] == "gated by its spec.schedulingGates (example.com/quota), read from the pod"
    assert gated["inferred"] is None


def test_the_schedulers_log_says_which_node_holds_a_member_at_permit(gang_cluster: Any) -> None:  # noqa: F811
    """With the scheduler's log readable through the API server (pods/log: the kubelet stand-in hands the
    scheduler process's output to the stand-in pod's container), the Permit wait is read, not inferred: the
    node is the one the scheduler reserved, which the what-if (not counting the other held member) may not
    choose."""
    cluster, standin = gang_cluster
    cluster.server.create_object("podgroups.scheduling.x-k8s.io", podgroup("big", 3, 120))
    add_member(cluster, "big-2", "big", schedulingGates=[{"name": "example.com/quota"}])
    add_member(cluster, "big-0", "big")
    add_member(cluster, "big-1", "big")
    cluster.server.wait_for(lambda: standin.process.log().count("waiting at Permit for Coscheduling") >= 2, timeout=30)
    pod = "my-custom-scheduler-standin"
    cluster.server.update_pod(pod, {"status": {"containerStatuses": [
        {"name": "scheduler", "ready": True, "restartCount": 0, "state": {"running": {}}}]}}, "kube-system")
    cluster.server.write_pod_log(pod, standin.process.log(), "kube-system", container="scheduler")
    logged = {line.split(" pod default/")[1].split(" reserved on ")[0]: line.split(" reserved on ")[1].split(",")[0]
              for line in standin.process.log().splitlines() if "waiting at Permit for Coscheduling" in line}
    for name in ("big-0", "big-1"):
        report = explain_json(cluster, name)
        assert report["outcome"] == "would_wait"
        assert report["likely_state"] == f"reserved on {logged[name]}, waiting at Permit for Coscheduling"
        assert report["inferred"] is None
        assert report["read_from"].startswith(f"the scheduler's log (pod kube-system/{pod}) at ")
        assert report["read_from"].endswith(f"\"pod default/{name} reserved on {logged[name]}, waiting at Permit "
                                            "for Coscheduling\"")
    assert "read from the scheduler's log" in explain_text(cluster, "big-0")
