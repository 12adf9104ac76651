"""`./lab logs`: the scheduler's logs read through the API (pods/log), the leader's first.

The pods are the Deployment's (namespace and selector labels as labkit.scheduler_deploy.manifests renders
them); the leader is the pod named in its Lease's holderIdentity ("<hostname>_<uuid>", the hostname being
the pod's name) while the Lease lasts: once renewTime + leaseDurationSeconds is past (by this host's clock),
no replica renews it and its holder is not leading, which is said instead. Every line is prefixed with its pod,
and with its container when the pod runs several, as `kubectl logs --prefix` does. With no scheduler running, it says why: no Deployment, scaled to 0, or a
container crash-looping (its last termination's reason and exit code; its previous instance's log follows).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.kube import Kube, KubeError
from labkit.scheduler_deploy.manifests import selector_labels
from scheduler.runtime.client import pod_path

Obj = dict[str, Any]
Write = Callable[[str], None]
_DURATION = re.compile(r"(\d+)(h|m|s)")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


class SchedulerNotRunning(UserError):
    """There is no scheduler pod to read logs from; the message says why and what to do."""


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    previous: bool = False
    since_seconds: int | None = None
    container: str | None = None


def parse_since(text: str) -> int:
    """kubectl's --since: a duration like 30s, 5m, 1h or 1h30m, in seconds."""
    if not re.fullmatch(r"(\d+[hms])+", text or ""):
        raise UserError(f"--since {text!r}: give a duration like 30s, 5m, 1h or 1h30m")
    return sum(int(n) * _SECONDS[unit] for n, unit in _DURATION.findall(text))


def _leader_pod(kube: Kube, lab: Lab) -> tuple[str | None, str | None]:
    """The pod leading by the scheduler's Lease, or None and why not when its holder let the Lease expire."""
    s = lab.scheduler
    lease = kube.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{s.namespace}/leases/{s.name}")
    spec = (lease or {}).get("spec") or {}
    holder = (spec.get("holderIdentity") or "").rpartition("_")[0]
    renewed, duration = spec.get("renewTime"), spec.get("leaseDurationSeconds")
    if not (holder and renewed and duration):
        return holder or None, None
    age = time.time() - datetime.fromisoformat(renewed).timestamp()
    if age <= duration:
        return holder, None
    return None, (f"no replica is leading: Lease {s.namespace}/{s.name} was last renewed {age:.0f} s ago and "
                  f"lasts {duration} s (by this host's clock), so its holder {holder} is not leading: no replica "
                  "renews it")


def _crash_loops(pod: Obj) -> list[str]:
    """One sentence per container waiting to restart after it terminated."""
    found = []
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        last = (status.get("lastState") or {}).get("terminated")
        if waiting.get("reason") == "CrashLoopBackOff" and last:
            found.append(f"pod {pod['metadata']['name']} container {status['name']} is crash-looping "
                         f"({status.get('restartCount', 0)} restarts): it last terminated with "
                         f"{last.get('reason', 'no reason')}, exit code {last.get('exitCode', '?')}")
    return found


def scheduler_pods(kube: Kube, lab: Lab) -> tuple[list[Obj], str | None]:
    """The scheduler's pods, the leader first, and why none leads when its Lease expired; SchedulerNotRunning
    when there is no pod to read."""
    s = lab.scheduler
    deployment = kube.get_or_none(f"/apis/apps/v1/namespaces/{s.namespace}/deployments/{s.name}")
    if deployment is None:
        raise SchedulerNotRunning(f"the scheduler is not deployed: no Deployment {s.namespace}/{s.name}; "
                                  "run ./lab deploy-scheduler")
    labels = ",".join(f"{k}={v}" for k, v in selector_labels(lab).items())
    pods = kube.items(pod_path(s.namespace), labelSelector=labels)
    if (deployment.get("spec") or {}).get("replicas", 1) == 0 and not pods:
        raise SchedulerNotRunning(f"the scheduler is scaled to 0: Deployment {s.namespace}/{s.name} has no "
                                  "replicas; run ./lab deploy-scheduler (it sets the lab's replicas) or "
                                  f"./lab kubectl -- -n {s.namespace} scale deployment {s.name} --replicas=1")
    if not pods:
        raise SchedulerNotRunning(f"no pods match {labels} in {s.namespace}: see ./lab kubectl -- -n "
                                  f"{s.namespace} describe deployment {s.name}")
    leader, no_leader = _leader_pod(kube, lab)
    pods.sort(key=lambda pod: (pod["metadata"]["name"] != leader, pod["metadata"]["name"]))
    return pods, no_leader


def _streams(pods: list[Obj], container: str | None) -> list[tuple[Obj, str, str]]:
    """(pod, container, prefix) for every container to read, in order."""
    streams = []
    for pod in pods:
        name = pod["metadata"]["name"]
        names = [c["name"] for c in pod["spec"].get("containers") or []]
        if container and container not in names:
            raise UserError(f"--container {container}: pod {name} has no such container; its containers: "
                            f"{', '.join(names)}")
        for each in [container] if container else names:
            prefix = f"[pod/{name}/{each}]" if len(names) > 1 else f"[pod/{name}]"
            streams.append((pod, each, prefix))
    return streams


def _copy(kube: Kube, pod: Obj, container: str, prefix: str, options: LogOptions, out: Write, err: Write) -> bool:
    meta = pod["metadata"]
    path = pod_path(meta["namespace"], meta["name"], "log")
    try:
        for line in kube.text_lines(path, follow=options.follow, container=container, sinceSeconds=options.since_seconds,
                                    previous="true" if options.previous else None):
            out(f"{prefix} {line}")
    except KubeError as error:
        err(f"{prefix} no logs: {error}")
        return False
    return True


def show_logs(kube: Kube, lab: Lab, options: LogOptions, out: Write, err: Write) -> bool:
    """Print the scheduler's logs; False when a container's log could not be read (said on `err`)."""
    pods, no_leader = scheduler_pods(kube, lab)
    if no_leader:
        err(no_leader)
    for note in (note for pod in pods for note in _crash_loops(pod)):
        err(note + (" (its previous instance's log follows)" if not options.previous else ""))
    streams = _streams(pods, options.container)
    if not options.follow:
        read = [_copy(kube, *stream, options, out, err) for stream in streams]  # every one, even after a failure
        return all(read)
    # Followed logs interleave as they come: one reader per container, lines written whole.
    lock = threading.Lock()

    def locked(write: Write) -> Write:
        def write_line(line: str) -> None:
            with lock:
                write(line)
        return write_line

    results: list[bool] = []
    readers = [threading.Thread(target=lambda s=stream: results.append(_copy(kube, *s, options, locked(out),
                                                                              locked(err))), daemon=True)
               for stream in streams]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    return all(results)
