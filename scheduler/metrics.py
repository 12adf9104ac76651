"""Prometheus metrics, named after kube-scheduler's where one exists so dashboards carry over.

A private registry (not the process-global default) so two schedulers in one process (tests) do not
collide and /metrics shows only the scheduler's series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
        self.cache_size = Gauge(
            "scheduler_cache_size",
            "Objects in the scheduler cache by type (nodes, pods, assumed_pods).",
            ["type"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "scheduler_leader",
            "1 while this instance holds the leader lease (or election is off), else 0.",
            registry=self.registry,
        )
        self.relists = Counter(
            "scheduler_informer_relists",
            "Full relists by resource and cause.",
            ["resource", "cause"],
            registry=self.registry,
        )
