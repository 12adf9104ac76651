"""Waiting for the scheduler's Deployment to roll out, judged like `kubectl rollout status`, and what to read
when it does not: the pods' phase, recent events and last log lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from labdef.lab import Lab
from labkit.console import Echo
from labkit.kube import REQUEST_TIMEOUT, Kube, pod_path
from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.manifests import selector_labels


@dataclass(frozen=True)
class Rollout:
    done: bool
    message: str
    failed: bool = False


def rollout_status(deployment: dict[str, Any]) -> Rollout:
    """The Deployment's rollout as `kubectl rollout status` judges it."""
    spec, status = deployment.get("spec", {}), deployment.get("status", {})
    name = deployment["metadata"]["name"]
    if deployment["metadata"].get("generation", 0) > status.get("observedGeneration", 0):
        return Rollout(False, "waiting for the deployment controller to observe the new spec")
    for condition in status.get("conditions", []):
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            return Rollout(False, f"deployment {name!r} exceeded its progress deadline", failed=True)
    want = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    total = status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < want:
        return Rollout(False, f"{updated} of {want} new replicas have been updated")
    if total > updated:
        return Rollout(False, f"{total - updated} old replicas are pending termination")
    if available < updated:
        return Rollout(False, f"{available} of {updated} updated replicas are available")
    return Rollout(True, f"deployment {name!r} successfully rolled out")


def pod_log(kube: Kube, namespace: str, name: str, tail_lines: int, container: str | None = None) -> str:
    """The last log lines of the pod's container (which must be named when the pod has several: extender
    mode's kube-scheduler and extender), or why there are none (a pod that never started has no log).

    Logs are plain text, which the project's raw-JSON client does not read: the official client's log call,
    with Kube's credentials, does (only when a rollout failed, so its own connection pool costs nothing).
    """
    with client.ApiClient(kube.client.configuration) as api:
        try:
            # _preload_content=False: the raw text (the client would parse a log line that looks like JSON)
            response = client.CoreV1Api(api).read_namespaced_pod_log(
                name, namespace, container=container, tail_lines=tail_lines, _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT)
        except ApiException as err:  # its str() carries every response header
            return f"(no logs: {err.status} {err.reason})"
        except HTTPError as err:
            return f"(no logs: {err})"
    return response.data.decode()


def diagnose(kube: Kube, namespace: str, selector: dict[str, str], tail_lines: int = 20) -> str:
    """The scheduler pods' phase, recent events and last log lines: what to read when a rollout fails."""
    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    pods = kube.items(pod_path(namespace), labelSelector=labels)
    if not pods:
        return f"no pods match {labels} in {namespace}: see `kubectl -n {namespace} describe deployment`"
    parts = []
    for pod in pods:
        name = pod["metadata"]["name"]
        waiting = [cs.get("state", {}).get("waiting", {}) for cs in pod.get("status", {}).get("containerStatuses", [])]
        reasons = ", ".join(f"{w['reason']}: {w.get('message', '')}".rstrip(": ") for w in waiting if w.get("reason"))
        parts.append(f"pod {name}: {pod.get('status', {}).get('phase', '?')}" + (f" ({reasons})" if reasons else ""))
        for event in kube.pod_events(namespace, name)[-10:]:
            parts.append(f"  event {event.get('type', '')} {event.get('reason', '')}: {event.get('message', '')}")
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        for container in containers or [None]:
            of = f" of {container}" if len(containers) > 1 else ""
            parts.append(f"  last {tail_lines} log lines{of}:")
            parts.extend(f"    {line}" for line in pod_log(kube, namespace, name, tail_lines, container).splitlines())
    return "\n".join(parts)


def wait_for_rollout(kube: Kube, lab: Lab, timeout: float = 300, poll: float = 2,
                     echo: Echo = print, clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> None:
    s = lab.scheduler
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/{s.name}"
    deadline = clock() + timeout
    last = ""
    while True:
        state = rollout_status(kube.get(path))
        if state.message != last:
            echo(f"rollout: {state.message}")
            last = state.message
        if state.done:
            return
        if state.failed or clock() > deadline:
            why = state.message if state.failed else f"not rolled out after {timeout:.0f}s ({state.message})"
            raise DeployError(f"the scheduler did not roll out: {why}\n"
                              + diagnose(kube, s.namespace, selector_labels(lab)))
        sleep(poll)
