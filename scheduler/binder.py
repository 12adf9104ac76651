"""Binding off the scheduling loop: a thread pool POSTing pods/{name}/binding.

The Binding carries metadata.uid, which the API server turns into a UID precondition: if the pod was
deleted and re-created under the same name, the bind fails (409 Conflict) instead of placing the new pod.
The official client's `create_namespaced_binding` raises "Invalid value for `target`, must not be `None`"
after a *successful* bind because it deserialises the returned Status as a Binding; this module posts raw
JSON and reads the status code, so that bug cannot bite.

Outcomes reported to the caller:
- BOUND         2xx
- GONE          404: the pod was deleted; nothing to retry
- CONFLICT      409: already assigned to a node, or the UID no longer matches; nothing to retry
- ERROR         anything else (5xx, 429, 403, connection): the caller forgets the assumption and retries
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from scheduler.client import ApiError, Client, describe_forbidden, pod_path
from scheduler.model import PodInfo

log = logging.getLogger(__name__)


class BindOutcome(enum.Enum):
    BOUND = "bound"
    GONE = "gone"
    CONFLICT = "conflict"
    ERROR = "error"


@dataclass(slots=True)
class BindResult:
    pod: PodInfo
    node: str
    outcome: BindOutcome
    seconds: float
    error: ApiError | None = None


def binding_body(pod: PodInfo, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def bind(client: Client, pod: PodInfo, node: str) -> BindResult:
    """One binding call, classified. Never raises for API answers."""
    start = time.perf_counter()
    try:
        client.request("POST", pod_path(pod.namespace, pod.name, "binding"), body=binding_body(pod, node))
        outcome, error = BindOutcome.BOUND, None
    except ApiError as err:
        error = err
        if err.status == 404:
            outcome = BindOutcome.GONE
        elif err.status == 409:
            outcome = BindOutcome.CONFLICT
        else:
            outcome = BindOutcome.ERROR
            if err.status == 403:
                log.error(describe_forbidden(err, "create", "pods/binding"))
    return BindResult(pod, node, outcome, time.perf_counter() - start, error)


class Binder:
    def __init__(self, client: Client, on_done: Callable[[BindResult], None], *, workers: int = 16) -> None:
        self.client = client
        self._on_done = on_done
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="binder")

    def submit(self, pod: PodInfo, node: str) -> None:
        self._pool.submit(self._run, pod, node)

    def _run(self, pod: PodInfo, node: str) -> None:
        try:
            result = bind(self.client, pod, node)
        except Exception as exc:  # unexpected: report as an error so the pod is retried, not lost
            log.exception("binding %s/%s to %s crashed", pod.namespace, pod.name, node)
            result = BindResult(pod, node, BindOutcome.ERROR, 0.0, ApiError(0, "Internal", str(exc)))
        try:
            self._on_done(result)
        except Exception:
            log.exception("handling the binding result of %s/%s failed", pod.namespace, pod.name)

    def close(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
