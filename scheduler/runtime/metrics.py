"""Prometheus metrics, named after kube-scheduler's where one exists so dashboards carry over.

``Metrics`` is the standalone scheduler's, ``ExtenderMetrics`` the extender's (its requests per verb, and
the same cache and informer series). Each has a private registry (not the process-global default) so two
schedulers in one process (tests) do not collide and /metrics shows only the scheduler's series.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric

from scheduler.runtime.client import RequestCounts

# kube-scheduler's buckets for scheduling_attempt_duration_seconds: exponential from 1 ms.
_LATENCY_BUCKETS = tuple(0.001 * 2**i for i in range(15))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Scheduling attempts by result (scheduled, unschedulable, error).",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (filter, score and assume; binding excluded).",
            ["result", "profile"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.e2e_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "Seconds from a pod entering the queue to its successful bind, over all its attempts.",
            ["attempts"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.binding_duration = Histogram(
            "scheduler_binding_duration_seconds",
            "Latency of the binding API call in seconds.",
            ["result"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Pending pods by queue (active, backoff, unschedulable, in_flight, gated).",
            ["queue"],
            registry=self.registry,
        )
        self.cache_size = _cache_size(self.registry)
        self.leader = Gauge(
            "scheduler_leader",
            "1 while this instance holds the leader lease (or election is off), else 0.",
            registry=self.registry,
        )
        self.relists = _relists(self.registry)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "DefaultPreemption runs (a pod no node fits, with a profile that preempts).",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Pods chosen for eviction per successful preemption.",
            buckets=tuple(2**i for i in range(8)),
            registry=self.registry,
        )
        self.events_dropped = Gauge(
            "scheduler_events_dropped",
            "Events and PodScheduled condition patches dropped because the event queue was full, in total.",
            registry=self.registry,
        )

    def export_client_counts(self, counts: RequestCounts) -> None:
        """Serve the API client's own request and watch-byte counts (read at each scrape)."""
        self.registry.register(_ClientCountsCollector(counts))


class _ClientCountsCollector:
    """The client's RequestCounts as two counters. client-go's rest_client_requests_total has no resource
    label, hence names of our own."""

    def __init__(self, counts: RequestCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        requests, watch_bytes = self.counts.totals()
        sent = CounterMetricFamily("scheduler_client_requests", "API requests sent by verb and resource "
                                   "(kube-apiserver's terms: LIST, WATCH, POST pods/binding...).",
                                   labels=["verb", "resource"])
        for (verb, resource), n in sorted(requests.items()):
            sent.add_metric([verb, resource], n)
        yield sent
        decoded = CounterMetricFamily("scheduler_watch_decoded_bytes", "Bytes of watch events decoded, by "
                                      "resource.", labels=["resource"])
        for resource, n in sorted(watch_bytes.items()):
            decoded.add_metric([resource], n)
        yield decoded


class ExtenderMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "scheduler_extender_requests",
            "Extender requests by verb (filter, prioritize) and HTTP status code.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.request_duration = Histogram(
            "scheduler_extender_request_duration_seconds",
            "Extender request latency in seconds by verb, from the body read to the answer written.",
            ["verb"],
            buckets=_EXTENDER_BUCKETS,
            registry=self.registry,
        )
        self.cache_size = _cache_size(self.registry)
        self.relists = _relists(self.registry)


# From 0.1 ms: an extender answer at 100 nodes takes well under kube-scheduler's 1 ms first bucket.
_EXTENDER_BUCKETS = tuple(0.0001 * 2**i for i in range(18))


def _cache_size(registry: CollectorRegistry) -> Gauge:
    return Gauge(
        "scheduler_cache_size",
        "Objects in the scheduler cache by type (nodes, pods, assumed_pods).",
        ["type"],
        registry=registry,
    )


def _relists(registry: CollectorRegistry) -> Counter:
    return Counter(
        "scheduler_informer_relists",
        "Full relists by resource and cause.",
        ["resource", "cause"],
        registry=registry,
    )
