"""The extender process: node, pod and namespace informers into a cache, and one HTTP listener serving the verbs
(POST .../filter, .../prioritize), /healthz, /readyz (caches synced) and /metrics.

No queue, no binding, no leader election: the extender places nothing, kube-scheduler asks and decides.
Every replica answers from its own cache.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from scheduler.extender.service import Extender
from scheduler.framework import Profile
from scheduler.runtime.cache import Cache
from scheduler.runtime.client import Client
from scheduler.runtime.eventhandlers import CacheHandlers
from scheduler.runtime.metrics import ExtenderMetrics
from scheduler.runtime.server import HealthServer

log = logging.getLogger(__name__)


class ExtenderProcess:
    def __init__(self, client: Client, profiles: Mapping[str, Profile], listen: tuple[str, int]) -> None:
        self.cache = Cache()
        self.metrics = ExtenderMetrics()
        self.handlers = CacheHandlers(self.cache)
        self.node_informer, self.pod_informer, self.namespace_informer = self.handlers.informers(
            client, self.metrics.relists)
        self.extender = Extender(self.cache, profiles, self.metrics, synced=self.synced)
        self.server = HealthServer(*listen, registry=self.metrics.registry, healthy=self._healthy,
                                   ready=self._ready, post=self.extender.handle)
        self._stop = threading.Event()
        self._housekeeping = threading.Thread(target=self._count_cache, name="cache-metrics", daemon=True)

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> None:
        self.node_informer.start()
        self.pod_informer.start()
        self.namespace_informer.start()
        self.server.start()
        self._housekeeping.start()

    def stop(self) -> None:
        self._stop.set()
        self.server.stop()
        self.node_informer.stop()
        self.pod_informer.stop()
        self.namespace_informer.stop()
        self._housekeeping.join(5)

    def synced(self) -> bool:
        return (self.node_informer.synced.is_set() and self.pod_informer.synced.is_set()
                and self.namespace_informer.synced.is_set())

    def _healthy(self) -> tuple[bool, str]:
        return True, "ok"

    def _ready(self) -> tuple[bool, str]:
        return (True, "ok") if self.synced() else (False, "caches not synced")

    def _count_cache(self) -> None:
        while not self._stop.wait(1.0):
            for kind, n in self.cache.counts().items():
                self.metrics.cache_size.labels(kind).set(n)
