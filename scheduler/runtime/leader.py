"""Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection package.

- A candidate reads the Lease. It may take it when nobody holds it, or when the record it last saw has
  not changed for leaseDurationSeconds *as measured by its own clock* (client-go's observedTime: clocks of
  different machines are never compared).
- Writes are optimistic: PUT with the resourceVersion that was read, so of two candidates racing for an
  expired lease the API lets exactly one win (the other gets 409 Conflict). Creating a missing Lease is a
  POST; a 409 AlreadyExists there means someone else created it first.
- The leader renews every retryPeriod, each attempt's requests bounded by what is left of renewDeadline
  (client-go bounds the renewal with a RenewDeadline context). If it cannot renew for renewDeadline it
  stops leading at once (deciding and sending bindings stop before another instance can possibly take
  over, because renewDeadline < leaseDuration) and becomes a candidate again.
- On shutdown the leader first stops leading (on_stopped returns once in-flight bindings are answered),
  then releases the lease (empty holder) so a standby takes over at once.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from scheduler.runtime.client import ApiError, Client, describe_forbidden

log = logging.getLogger(__name__)


def micro_time(ts: float | None = None) -> str:
    """metav1.MicroTime in RFC 3339 with microseconds, as the API serialises it."""
    dt = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        client: Client,
        *,
        namespace: str,
        name: str,
        identity: str | None = None,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not (lease_duration > renew_deadline > retry_period > 0):
            raise ValueError(
                "leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0, got "
                f"{lease_duration}, {renew_deadline}, {retry_period}"
            )
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._clock = clock
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._leading = threading.Event()
        self.holder: str = ""  # last holder seen, for logs and /readyz

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    # -- one attempt -----------------------------------------------------------------------------
    def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """One read-modify-write of the Lease, each request given `timeout` seconds (default twice the
        retry period). True if we hold it afterwards."""
        now = self._clock()
        wall = time.time()
        timeout = timeout or self.retry_period * 2
        try:
            lease = self.client.get(self.path, timeout=timeout)
        except ApiError as err:
            if err.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(acquire=wall, renew=wall, transitions=0),
            }
            try:
                created = self.client.post(
                    f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases",
                    body,
                    timeout=timeout,
                )
            except ApiError as err2:
                if err2.status == 409:
                    return False
                raise
            self._observe(created.get("spec", {}), now)
            return True

        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observe(spec, now)
        holder = spec.get("holderIdentity") or ""
        self.holder = holder
        duration = spec.get("leaseDurationSeconds") or self.lease_duration
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False  # held by someone else and not yet expired by our clock
        if holder == self.identity:
            acquire = spec.get("acquireTime") or micro_time(wall)
            transitions = spec.get("leaseTransitions") or 0
        else:
            acquire = micro_time(wall)
            transitions = (spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = self._spec(acquire=acquire, renew=wall, transitions=transitions)
        try:
            updated = self.client.put(self.path, lease, timeout=timeout)
        except ApiError as err:
            if err.status == 409:
                return False  # someone else wrote first: their record wins
            raise
        self._observe(updated.get("spec", {}), now)
        self.holder = self.identity
        return True

    def _spec(self, *, acquire: float | str, renew: float, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": acquire if isinstance(acquire, str) else micro_time(acquire),
            "renewTime": micro_time(renew),
            "leaseTransitions": transitions,
        }

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        self._observed_spec = spec
        self._observed_at = now

    def _attempt(self, timeout: float | None = None) -> bool:
        try:
            return self.try_acquire_or_renew(timeout)
        except ApiError as err:
            if err.status == 403:
                log.error(
                    describe_forbidden(err, "get/create/update", f"leases ({self.namespace}/{self.name})")
                )
            else:
                log.warning("leader election: %s", err)
            return False

    # -- loop ------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Acquire, lead until the lease is lost or `stop` is set, repeat. Releases on stop."""
        while not stop.is_set():
            if not self._acquire(stop):
                break
            self._leading.set()
            log.info(
                "leader election: %s became leader of lease %s/%s", self.identity, self.namespace, self.name
            )
            try:
                self._on_started()
                self._renew(stop)
            finally:
                self._leading.clear()
                self._on_stopped()
            if stop.is_set():
                self.release()
                break
            log.error(
                "leader election: lost lease %s/%s; scheduling stopped, standing by",
                self.namespace,
                self.name,
            )

    def _acquire(self, stop: threading.Event) -> bool:
        announced = ""
        while not stop.is_set():
            if self._attempt():
                return True
            if self.holder and self.holder != announced:
                log.info(
                    "leader election: lease %s/%s held by %s; standing by",
                    self.namespace,
                    self.name,
                    self.holder,
                )
                announced = self.holder
            stop.wait(self.retry_period * random.uniform(1.0, 1.2))  # client-go's JitterFactor 1.2
        return False

    def _renew(self, stop: threading.Event) -> None:
        last_ok = self._clock()
        while not stop.wait(self.retry_period):
            left = last_ok + self.renew_deadline - self._clock()
            # A GET may be retried once on a fresh connection (client.py): half of what is left each.
            if left > 0 and self._attempt(timeout=min(self.retry_period * 2, left / 2)):
                last_ok = self._clock()
            elif self._clock() - last_ok >= self.renew_deadline or (
                self.holder and self.holder != self.identity
            ):
                return

    def release(self) -> None:
        """Give the lease up so a standby does not wait for it to expire."""
        try:
            lease = self.client.get(self.path, timeout=self.retry_period * 2)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time()
            lease["spec"] = {
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": spec.get("leaseTransitions") or 0,
            }
            self.client.put(self.path, lease, timeout=self.retry_period * 2)
        except ApiError as err:
            log.warning("leader election: releasing the lease failed: %s", err)
