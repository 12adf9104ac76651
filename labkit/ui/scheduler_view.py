"""The scheduler's own state for the page: its replicas, which one leads (the Lease, read as `./lab logs`
reads it: labkit.scheduler_logs), and the leader's /metrics headline figures read through the API server's
pod proxy (pods/proxy), when the cluster lets us; every failure becomes a sentence, never an exception."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from labdef.lab import Lab
from labkit.kube import Kube, KubeError
from labkit.scheduler_logs import SchedulerNotRunning, scheduler_pods
from scheduler.runtime.client import pod_path

METRICS_PORT_NAME = "http-metrics"  # templates/scheduler/deployment.yaml.j2
LOGS_HINT = "./lab logs --follow"


def scheduler_state(kube: Kube, lab: Lab) -> dict[str, Any]:
    state: dict[str, Any] = {"name": lab.scheduler.name, "namespace": lab.scheduler.namespace, "replicas": [],
                             "leader": None, "problem": None, "metrics": None, "metrics_problem": None,
                             "logs": LOGS_HINT}
    try:
        pods, no_leader = scheduler_pods(kube, lab)
    except (SchedulerNotRunning, KubeError) as err:
        state["problem"] = str(err)
        return state
    state["replicas"] = [p["metadata"]["name"] for p in pods]
    # scheduler_pods puts the Lease's holder first, when it holds it
    state["leader"] = None if no_leader else pods[0]["metadata"]["name"]
    state["problem"] = no_leader
    try:
        state["metrics"] = headline(read_metrics(kube, pods[0]))
    except (KubeError, ValueError) as err:
        state["metrics_problem"] = f"/metrics not reachable through the API server's pod proxy: {err}"
    return state


def read_metrics(kube: Kube, pod: dict[str, Any]) -> str:
    port = next((p.get("containerPort") for c in (pod.get("spec") or {}).get("containers") or []
                 for p in c.get("ports") or [] if p.get("name") == METRICS_PORT_NAME), None)
    if port is None:
        raise ValueError(f"pod {pod['metadata']['name']} names no {METRICS_PORT_NAME} port")
    meta = pod["metadata"]
    path = pod_path(meta["namespace"], f"{meta['name']}:{port}", "proxy/metrics")
    return "\n".join(kube.text_lines(path))


def headline(text: str) -> dict[str, float]:
    """Scheduled, unschedulable and error attempts, and the pending pods by queue."""
    figures: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "scheduler_schedule_attempts_total":
                result = sample.labels.get("result", "")
                figures[result] = figures.get(result, 0) + sample.value
            elif sample.name == "scheduler_pending_pods":
                figures[f"pending {sample.labels.get('queue', '')}"] = sample.value
    return figures
