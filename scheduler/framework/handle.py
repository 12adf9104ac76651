"""What a plugin's own points may use beyond their arguments (kube-scheduler's framework.Handle), and the state
one pod's cycle carries from its scheduling cycle into its binding cycle (its CycleState).

The framework makes a plugin's ``setup`` class once per profile with ``(args, handle)``. The handle is owned by
whoever runs the framework: the scheduler process gives one that calls the API server through its own client
(retries, rate limits, metrics), the in-process test driver (``scheduler.testing.cycles``) one that records
calls on a fake API. Filter and score stay pure: only PreEnqueue, QueueSort, PostFilter, Reserve, Permit,
PreBind, Bind and PostBind are given the handle, through their plugin's instance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scheduler.framework.objects import ObjectStore, Resource

if TYPE_CHECKING:
    from scheduler.framework.cluster_view import ClusterView
    from scheduler.framework.status import Status
    from scheduler.framework.waiting import WaitingPod, WaitingPods
    from scheduler.model import PodInfo

__all__ = ["ApiCallError", "ApiCalls", "CycleState", "Handle"]


class ApiCalls(ABC):
    """Calls to the API server for binding-cycle points. ``request`` returns the decoded answer and raises
    ``ApiCallError`` (``status``, ``reason``, ``message``) when the server refuses or cannot be reached."""

    @abstractmethod
    def request(self, method: str, path: str, body: Any = None) -> Any: ...

    def patch_status(self, resource: Resource | str, namespace: str | None, name: str, patch: Mapping[str, Any],
                     ) -> Any:
        """A JSON merge patch of an object's status subresource."""
        res = resource if isinstance(resource, Resource) else Resource.parse(resource)
        return self.request("PATCH", Resource(res.group, res.version, res.resource, "status").object_path(
            namespace, name), dict(patch))

    def patch_pod(self, pod: PodInfo, patch: Mapping[str, Any], subresource: str = "") -> Any:
        """A JSON merge patch of the pod this cycle decided on, and of no other: the patch carries the pod's UID,
        so a pod deleted and re-created under its name refuses it (422: metadata.uid is immutable) instead of
        taking a write meant for its predecessor."""
        meta = {**(patch.get("metadata") or {}), "uid": pod.uid}
        path = Resource("", "v1", "pods", subresource).object_path(pod.namespace, pod.name)
        return self.request("PATCH", path, {**patch, "metadata": meta})


class ApiCallError(Exception):
    """An API call failed: the HTTP status (0: no answer), the Status reason and message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


class Handle(ABC):
    """The framework-owned services a plugin instance may use. One per profile. The owner gives the watched
    kinds' stores, the waiting pods and the API; a kind of handle says what its clock and its binding are."""

    def __init__(self, scheduler_name: str, kinds: Mapping[str, ObjectStore], waiting: WaitingPods,
                 api: ApiCalls, activate: Callable[[list[str]], None] | None = None) -> None:
        self.scheduler_name = scheduler_name
        self._kinds = {str(Resource.parse(kind)): store for kind, store in kinds.items()}
        self._waiting = waiting
        self._api = api
        self._activate = activate  # the owner's queue: pods by "namespace/name" into the active queue

    @property
    def waiting(self) -> WaitingPods:
        return self._waiting

    @property
    def api(self) -> ApiCalls:
        return self._api

    def objects(self, resource: str) -> ObjectStore:
        """The store of a kind some plugin of this scheduler ``watches`` (KeyError naming it otherwise)."""
        store = self._kinds.get(str(Resource.parse(resource)))
        if store is None:
            raise KeyError(f"{resource} is not watched by any plugin of this scheduler: declare it in the "
                           f"plugin's watches (watched: {', '.join(self._kinds) or 'none'})")
        return store

    @abstractmethod
    def now(self) -> float:
        """The scheduler's clock in seconds (monotonic in a process, simulated in tests)."""

    @abstractmethod
    def bind(self, pod: PodInfo, node: str) -> Status:
        """DefaultBinder's binding: POST pods/<name>/binding with the pod's UID."""

    def waiting_pods(self) -> list[WaitingPod]:
        """Every pod waiting at Permit, oldest first (kube-scheduler's IterateOverWaitingPods)."""
        return self.waiting.all()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def activate(self, pods: Iterable[str]) -> None:
        """Try these pending pods ("namespace/name") next: out of their backoff or their wait for a cluster
        change, into the active queue (kube-scheduler's Handle.Activate). Pods not waiting so are left alone."""
        if self._activate is not None:
            self._activate(list(pods))


class CycleState(dict[str, Any]):
    """One pod's cycle: what its plugins write in Reserve and read in Permit, PreBind, Bind, PostBind and
    Unreserve, under keys they choose (their name, by convention). ``cluster`` is the snapshot the pod was
    decided on (assumed pods counted); ``node`` the chosen node."""

    __slots__ = ("cluster", "node")

    def __init__(self, cluster: ClusterView | None = None, node: str = "") -> None:
        super().__init__()
        self.cluster = cluster
        self.node = node
