"""What a failed write about a pod means, judged by the pod as it now is rather than by the status code.

An API answer alone does not say what became of the pod. A binding refused with 409 Conflict may mean the
pod is already assigned, was re-created under the same name (its UID no longer matches), or that storage
failed: kube-apiserver's binding registry reports every storage error, etcd's "rpc error: code =
Unavailable" included, as a Conflict on pods/binding. So, as kube-scheduler looks the pod up after a failed
binding, the pod is read again (GET) and the write is judged by what it is:

- ASSIGNED  spec.nodeName is set: it is placed (by this scheduler or another); nothing to retry
- GONE      not found, being deleted, or a same-name successor (its UID differs): nothing to retry, and a
            successor is a pod of its own that arrives through the watch
- PENDING   the same pod, still unassigned: the write may be retried
- UNKNOWN   the pod could not be read either (the API server or its storage is still failing): retry
            later, when the retry itself or the watch will tell

Every write about a pod also carries the pod's UID (``uid_guard``), so a write that does go through can only
land on the pod it was meant for, never on a successor of the same name.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.model import PodInfo
from scheduler.runtime.client import ApiError, Client, RequestCancelled, pod_path

# A read that judges a failed write: short, since it runs on a binder or event worker and the answer only
# decides between dropping and retrying (an unanswered read means "retry").
READ_TIMEOUT = 5.0
# Pauses between attempts of a status write, as kube-scheduler's retry.DefaultBackoff (10 ms, x5, 4 steps):
# enough for a blip, short enough not to hold an event worker when the API server is down for longer.
RETRY_PAUSES = (0.01, 0.05, 0.25)


class PodStanding(enum.Enum):
    ASSIGNED = "assigned"
    GONE = "gone"
    PENDING = "pending"
    UNKNOWN = "unknown"

    @property
    def settled(self) -> bool:
        """Nothing left to write about this pod object: it is placed or no longer exists."""
        return self in (PodStanding.ASSIGNED, PodStanding.GONE)


def state_of(obj: Mapping[str, Any] | None, uid: str) -> PodStanding:
    """The state of the pod with ``uid`` given the object now stored under its name (None: not found)."""
    if not obj:
        return PodStanding.GONE
    meta = obj.get("metadata") or {}
    if meta.get("uid") != uid or meta.get("deletionTimestamp"):
        return PodStanding.GONE
    if (obj.get("spec") or {}).get("nodeName"):
        return PodStanding.ASSIGNED
    return PodStanding.PENDING


def read_state(client: Client, pod: PodInfo, cancel: threading.Event | None = None) -> PodStanding:
    """GET the pod and judge it; UNKNOWN when it cannot be read."""
    try:
        obj = client.request("GET", pod_path(pod.namespace, pod.name), timeout=READ_TIMEOUT, cancel=cancel)
    except ApiError as err:
        return PodStanding.GONE if err.status == 404 else PodStanding.UNKNOWN
    except RequestCancelled:
        return PodStanding.UNKNOWN
    return state_of(obj, pod.uid)


def retriable(err: ApiError) -> bool:
    """An answer that says nothing about the pod: no answer at all, throttling, or a server-side failure."""
    return err.status == 0 or err.status == 429 or err.status >= 500


def uid_guard(pod: PodInfo, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (a patch) carrying the pod's metadata.uid: kube-apiserver refuses it (422, uid is immutable)
    when the object under that name is a different pod, so it never lands on a same-name successor."""
    return {**body, "metadata": {**(body.get("metadata") or {}), "uid": pod.uid}}


def delete_options(pod: PodInfo) -> dict[str, Any]:
    """DeleteOptions with a UID precondition: deleting removes this pod or nothing (409 for a successor)."""
    return {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": pod.uid}}


def write_about(client: Client, pod: PodInfo, write: Callable[[], Any], *,
                wanted: Callable[[], bool] = lambda: True,
                pauses: tuple[float, ...] = RETRY_PAUSES) -> bool:
    """Run ``write`` (a write about ``pod`` carrying its UID) until it goes through: True. False when there
    is nothing to write any more: ``wanted()`` says it is no longer news, or a refusal naming the pod
    (404, 409, 422) turns out, once the pod is read, to mean it is gone, replaced or assigned. A server
    error (5xx), or a refusal while the pod is still pending, is tried again after each of ``pauses``. Not
    tried again: 429 (the client already waited out its Retry-After as often as the request's timeout allowed,
    and the API server asked for less traffic) and no answer at all (a request that already waited out its timeout, or a
    refused connection). The last ApiError is raised when every attempt failed."""
    for attempt in range(len(pauses) + 1):
        if not wanted():
            return False
        try:
            write()
            return True
        except ApiError as err:
            if err.status == 403:
                raise
            if err.status == 404:
                return False  # no pod of that name: this one is gone
            if not retriable(err) and read_state(client, pod).settled:
                return False
            if attempt == len(pauses) or err.status in (0, 429):
                raise
        time.sleep(pauses[attempt])
    return False  # not reached: the last attempt returns or raises
