"""LeastLoaded's scores: by pod count or requested resources, least or most allocated."""

from __future__ import annotations

import pytest

from least_loaded import PLUGINS, LeastLoadedArgs
from tests.scheduler.builders import node, pod

PLUGIN = PLUGINS[0]


def busy(cpu: str = "0", memory: str = "0"):
    return pod("busy", requests={"cpu": cpu, "memory": memory})



def loaded(name: str, count: int, cpu: str = "4"):
    return node(name, cpu=cpu, pods_on_it=[pod(f"{name}-{i}", requests={"cpu": "100m"}) for i in range(count)])


@pytest.mark.parametrize(
    ("counts", "strategy", "expected"),
    [
        ([0, 2, 4], "LeastAllocated", [100, 50, 0]),
        ([0, 2, 4], "MostAllocated", [0, 50, 100]),
        ([3, 3, 3], "LeastAllocated", [100, 100, 100]),
        ([5, 6], "LeastAllocated", [100, 0]),
        ([0, 1, 1000], "LeastAllocated", [100, 99, 0]),  # only the least loaded reaches 100
    ],
)
def test_least_loaded_pod_count(counts, strategy, expected):
    nodes = [loaded(f"n{i}", c) for i, c in enumerate(counts)]
    args = LeastLoadedArgs(strategy=strategy)
    assert PLUGIN.score_nodes(pod(), nodes, args) == expected


def test_least_loaded_requested_resources():
    # same pod count, different cpu use: n0 idle, n1 half full, n2 nearly full
    nodes = [node("n0", cpu="4", memory="8Gi"),
             node("n1", cpu="4", memory="8Gi", pods_on_it=[busy("2", "4Gi")]),
             node("n2", cpu="4", memory="8Gi", pods_on_it=[busy("3500m", "7Gi")])]
    p = pod(requests={"cpu": "100m", "memory": "100Mi"})
    assert PLUGIN.score_nodes(p, nodes, LeastLoadedArgs(mode="requestedResources")) == [100, 42, 0]
    packed = PLUGIN.score_nodes(p, nodes, LeastLoadedArgs(mode="requestedResources",
                                                                        strategy="MostAllocated"))
    assert packed == [0, 57, 100]
