"""pods/log for the API test server: container logs from text the test gives, answered as the real server does.

What it models: GET /api/v1/namespaces/{ns}/pods/{name}/log with `container`, `previous`, `sinceSeconds`
and `follow`, answered `text/plain` (chunked while following). The choice of container and its errors are
the API server's (pkg/registry/core/pod/strategy.go LogLocation): no container named in a pod with several
is 400 "a container name must be specified for pod P, choose one of: [a b]", an unknown one is 400
"container C is not valid for pod P", a pod not bound to a node answers an empty body. Which container
instance is read and its errors are the kubelet's (pkg/kubelet/kubelet_pods.go validateContainerLogStatus),
judged from the pod's status as the test set it: `previous` without a lastState.terminated is 400
'previous terminated container "C" in pod "P" not found'; a container waiting with no previous instance is
400 'container "C" in pod "P" is waiting to start: REASON'; a container with no status is 400
'container "C" in pod "P" is not available'.

What it does not model: the log text itself (only what tests write with KubeApiServer.write_pod_log, each
line stamped when written or at the time given), timestamps=true, tailLines, limitBytes, init and
ephemeral containers. A follow ends when the test ends that container's log (end_pod_log: the container
exited), when the pod is deleted, or when the client goes away.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from kubeapi_testserver.errors import StatusError

Key = tuple[str, str, str, bool]  # namespace, pod, container, previous


class PodLogs:
    """Log lines by container instance, and a condition that wakes followers when lines are written."""

    def __init__(self) -> None:
        self._lines: dict[Key, list[tuple[float, str]]] = defaultdict(list)
        self._ended: set[Key] = set()
        self._changed = threading.Condition()

    def write(self, key: Key, text: str, at: float | None = None) -> None:
        stamp = time.time() if at is None else at
        with self._changed:
            self._lines[key].extend((stamp, line) for line in text.splitlines())
            self._changed.notify_all()

    def end(self, key: Key) -> None:
        with self._changed:
            self._ended.add(key)
            self._changed.notify_all()

    def read(self, key: Key, start: int, since: float | None) -> tuple[list[str], int, bool]:
        """Lines from index `start` not older than `since`, the next index, and whether the log has ended."""
        with self._changed:
            lines = self._lines.get(key, [])
            picked = [text for stamp, text in lines[start:] if since is None or stamp >= since]
            return picked, len(lines), key in self._ended

    def wait(self, key: Key, seen: int, timeout: float) -> None:
        with self._changed:
            if len(self._lines.get(key, [])) == seen and key not in self._ended:
                self._changed.wait(timeout)


def _names(containers: list[dict[str, Any]]) -> str:
    return " ".join(c["name"] for c in containers)


def log_target(pod: dict[str, Any], query: dict[str, str]) -> tuple[str, bool] | None:
    """(container, whether its previous instance is read), None for a pod with no node yet; StatusError as the
    server answers."""
    name = pod["metadata"]["name"]
    containers = pod["spec"].get("containers") or []
    container = query.get("container", "")
    if not container:
        if len(containers) != 1:
            raise StatusError.bad_request(
                f"a container name must be specified for pod {name}, choose one of: [{_names(containers)}]")
        container = containers[0]["name"]
    elif container not in [c["name"] for c in containers]:
        raise StatusError.bad_request(f"container {container} is not valid for pod {name}")
    if not pod["spec"].get("nodeName"):
        return None
    previous = query.get("previous", "") in ("true", "1", "True")
    statuses = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    status = statuses.get(container)
    if status is None:
        raise StatusError.bad_request(f'container "{container}" in pod "{name}" is not available')
    last_terminated = (status.get("lastState") or {}).get("terminated")
    if previous and not last_terminated:
        raise StatusError.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
    waiting = (status.get("state") or {}).get("waiting")
    if waiting and not last_terminated:
        raise StatusError.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: {waiting.get("reason", "")}')
    # A container waiting to restart (CrashLoopBackOff) shows the instance that last ran, as the kubelet does.
    return container, previous or bool(waiting)
