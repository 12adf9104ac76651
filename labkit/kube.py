"""The host side's API calls (test-placement, deploy-scheduler, status), as JSON dicts (camelCase, as sent).

The requests go through the scheduler's own raw-JSON client (scheduler.runtime.client.Client: the official
client's kubeconfig loading, certificates, tokens and connection pool, without its generated models), so
the objects can go straight into the scheduler's own `PodInfo.from_api` / `NodeInfo.from_api`, exactly as
the scheduler sees them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from labdef.errors import UserError
from labkit.console import warn
from scheduler.runtime.client import ApiError, Client, pod_path, unverified_tls_notice

Obj = dict[str, Any]
REQUEST_TIMEOUT = 15  # seconds for one call; waits are loops of short calls, never one long one
MERGE_PATCH = "application/merge-patch+json"


class KubeError(UserError):
    """A call failed; `status` is the HTTP status (0 when the server could not be reached)."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason

    @property
    def not_found(self) -> bool:
        return self.status == 404


class KubeconfigError(UserError):
    """The kubeconfig cannot be used (missing file, unknown context)."""


class Kube:
    """One API server reached through a kubeconfig (and optionally one of its contexts)."""

    def __init__(self, client: Client, where: str) -> None:
        self.client = client
        self.where = where  # for messages: "https://192.168.56.10:6443 (kubeconfig .lab/x/kubeconfig)"

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path, context: str | None = None) -> Kube:
        if not kubeconfig.exists():
            raise KubeconfigError(
                f"{kubeconfig}: no such kubeconfig; bring the lab up with `./lab up` (it exports one there) "
                "or pass --kubeconfig FILE")
        configuration = k8s_client.Configuration()
        try:
            k8s_config.load_kube_config(config_file=str(kubeconfig), context=context,
                                        client_configuration=configuration)
        except ConfigException as err:
            raise KubeconfigError(f"{kubeconfig}: {err}; check --context against `kubectl config get-contexts`") from None
        if notice := unverified_tls_notice(configuration, str(kubeconfig)):
            warn(notice)
        # qps 0: no client-side rate limit (a run makes a few calls a second).
        return cls(Client(configuration, qps=0), f"{configuration.host} (kubeconfig {kubeconfig})")

    def close(self) -> None:
        self.client.close()

    # --------------------------------------------------------------------------------------- raw calls

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str = "application/json") -> Obj:
        try:
            return self.client.request(method, path, query=query, body=body, content_type=content_type,
                                       timeout=REQUEST_TIMEOUT)
        except ApiError as err:
            raise self._error(method, path, err) from None

    def text_lines(self, path: str, *, follow: bool = False, **query: Any) -> Iterator[str]:
        """A plain-text answer line by line (pods/log); with `follow`, for as long as the server streams."""
        try:
            yield from self.client.text_lines(path, {**query, "follow": "true" if follow else None},
                                              read_timeout=None if follow else REQUEST_TIMEOUT)
        except ApiError as err:
            raise self._error("GET", path, err) from None

    def _error(self, method: str, path: str, err: ApiError) -> KubeError:
        if err.unreachable:
            return KubeError(f"cannot reach the API server at {self.where}: {err.__cause__ or err.message}")
        return KubeError(f"{method} {path}: {err.status} {err.message or err.reason}", status=err.status,
                         reason=err.reason)

    def get(self, path: str, **query: Any) -> Obj:
        return self.request("GET", path, query=query or None)

    def get_or_none(self, path: str) -> Obj | None:
        try:
            return self.get(path)
        except KubeError as err:
            if err.not_found:
                return None
            raise

    def items(self, path: str, **query: Any) -> list[Obj]:
        return self.get(path, **query).get("items") or []

    def create(self, path: str, body: Obj) -> Obj:
        return self.request("POST", path, body=body)

    def merge_patch(self, path: str, body: Obj) -> Obj:
        return self.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    def delete(self, path: str, grace_seconds: int | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self.request("DELETE", path, body=body)
        except KubeError as err:
            if not err.not_found:
                raise

    # ------------------------------------------------------------------------------------ typed reads

    def nodes(self) -> list[Obj]:
        return self.items("/api/v1/nodes")

    def live_pods(self) -> list[Obj]:
        """Every pod that still holds a place on a node (what the scheduler's cache counts)."""
        return self.items("/api/v1/pods", fieldSelector="status.phase!=Succeeded,status.phase!=Failed")

    def pod(self, namespace: str, name: str) -> Obj | None:
        return self.get_or_none(pod_path(namespace, name))

    def pod_events(self, namespace: str, name: str, uid: str = "") -> list[Obj]:
        """core/v1 events about one pod, oldest first (the scheduler's events.k8s.io events included)."""
        selector = f"involvedObject.kind=Pod,involvedObject.name={name}"
        if uid:
            selector += f",involvedObject.uid={uid}"
        events = self.items(f"/api/v1/namespaces/{quote(namespace)}/events", fieldSelector=selector)
        return sorted(events, key=event_time)


def event_time(event: Obj) -> str:
    return (event.get("eventTime") or event.get("lastTimestamp") or event.get("firstTimestamp")
            or (event.get("metadata") or {}).get("creationTimestamp") or "")

