"""The scheduler process's framework handle: what plugins' own points may use, backed by the process's client,
its informers' stores of watched kinds, its waiting pods and its clock (``scheduler.framework.Handle``).

API calls go through the scheduler's own client (its rate limit, retries of idempotent reads, request metrics);
a refusal reaches the plugin as ``ApiCallError``. DefaultBinder's binding is the binder's POST of a Binding with
the pod's UID, classified as the runtime classifies every binding (``scheduler.runtime.binder.bind``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework import ApiCallError, ApiCalls, Code, Handle, ObjectStore, Status
from scheduler.framework.waiting import WaitingPods
from scheduler.model import PodInfo
from scheduler.runtime.binder import BindOutcome, BindResult, bind
from scheduler.runtime.client import ApiError, Client

__all__ = ["ClientApi", "RuntimeHandle", "status_of_binding"]

# A plugin's API call that takes longer than this is given up: its point fails and the pod is retried.
PLUGIN_CALL_TIMEOUT = 15.0


class ClientApi(ApiCalls):
    """``ApiCalls`` over the scheduler's client; JSON bodies, PATCH as a JSON merge patch."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def request(self, method: str, path: str, body: Any = None) -> Any:
        content_type = "application/merge-patch+json" if method.upper() == "PATCH" else "application/json"
        try:
            return self.client.request(method.upper(), path, body=body, content_type=content_type,
                                       timeout=PLUGIN_CALL_TIMEOUT)
        except ApiError as err:
            raise ApiCallError(err.status, err.reason, err.message) from err


def status_of_binding(result: BindResult) -> Status:
    """A binding's outcome as a Bind status: bound -> SUCCESS; anything else -> ERROR with the server's words."""
    if result.outcome is BindOutcome.BOUND:
        return Status(Code.SUCCESS)
    what = result.error.message if result.error is not None else result.outcome.value
    return Status(Code.ERROR, (f"binding rejected: {what}",))


class RuntimeHandle(Handle):
    """One profile's handle in the scheduler process. ``binding_results`` keeps DefaultBinder's last result
    per pod UID, so the binding outcome is judged by what the server said (gone, conflict, error)."""

    def __init__(self, scheduler_name: str, client: Client, kinds: Mapping[str, ObjectStore],
                 waiting: WaitingPods, clock: Callable[[], float] = time.monotonic,
                 activate: Callable[[list[str]], None] | None = None) -> None:
        super().__init__(scheduler_name, kinds, waiting, ClientApi(client), activate)
        self._client = client
        self._clock = clock
        self.halt: threading.Event | None = None  # the binder's halt of the current leadership term
        self._results: dict[str, BindResult] = {}
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._clock()

    def bind(self, pod: PodInfo, node: str, halt: threading.Event | None = None) -> Status:
        result = bind(self._client, pod, node, halt if halt is not None else self.halt)
        with self._lock:
            self._results[pod.uid] = result
        return status_of_binding(result)

    def binding_result(self, uid: str) -> BindResult | None:
        """DefaultBinder's result for the pod, taken (once)."""
        with self._lock:
            return self._results.pop(uid, None)
