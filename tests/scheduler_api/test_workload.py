"""A whole workload placed end to end over HTTP against the Kubernetes API test server, checked against the
distribution kube-scheduler 1.36 produced for it.

kube-scheduler 1.36.2 on a real kube-apiserver (500 nodes in 10 zones, 2,000 pods in four groups, each pod
preferring its own group's zone with weight 100) put every group in one zone, on that zone's nodes only, in
every run; with one filter goroutine (parallelism 1) every pod on the same node run after run. That comes from
how it breaks ties without extenders (the first node its heap yields over the feasible nodes, searched from a
rotating start in its zone-interleaved node order), which this scheduler follows. Scaled down here: 200 nodes,
10 zones of 20 (named so that the API's name order is zone by zone, not interleaved), 200 pods; 100 nodes are
searched per decision, as kube-scheduler would at that size."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeapi_testserver.objects import make_pod
from tests.scheduler_api.harness import SCHEDULER, config_with, running_scheduler

pytestmark = pytest.mark.api

ZONE = "topology.kubernetes.io/zone"
NODES, ZONES, PODS, GROUPS = 200, 10, 200, 4
PER_ZONE = NODES // ZONES


def zone_of(node: str) -> str:
    return f"zone-{int(node.removeprefix('node-')) // PER_ZONE}"


def group_pod(i: int) -> dict[str, Any]:
    """Pod i of group g(i mod 4), labelled with its group and preferring (weight 100) a zone holding it."""
    group = f"g{i % GROUPS}"
    pod = make_pod(f"pod-{i:03d}", cpu="100m", memory="500Mi", scheduler_name=SCHEDULER, labels={"group": group})
    pod["spec"]["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"group": group}},
                                            "topologyKey": ZONE}}]}}
    return pod


def place_workload(kube_api: Any, kubeconfig: Any) -> dict[str, str]:
    """Create the pods (interleaved by group, as pending pods before the scheduler starts), run the scheduler
    until all are bound, stop it; delete the pods. {pod name: node}."""
    for i in range(PODS):
        kube_api.add_pod(group_pod(i))
    with running_scheduler(kubeconfig, config_with()):
        kube_api.wait_for(lambda: len(kube_api.bound_pods()) == PODS, timeout=60)
    placed = {key.split("/")[1]: node for key, node in kube_api.bound_pods().items()}
    for name in placed:
        kube_api.remove_pod(name)
    return placed


def test_preferred_zone_affinity_workload_lands_as_kube_scheduler_places_it(kube_api, kube_api_kubeconfig) -> None:
    for i in range(NODES):
        name = f"node-{i:03d}"
        kube_api.add_node(name, cpu="32", memory="128Gi", labels={ZONE: zone_of(name)})
    placed = place_workload(kube_api, kube_api_kubeconfig)

    zones_by_group = {f"g{g}": {zone_of(placed[f"pod-{i:03d}"]) for i in range(g, PODS, GROUPS)}
                      for g in range(GROUPS)}
    assert zones_by_group == {f"g{g}": {"zone-0"} for g in range(GROUPS)}  # every group in one zone, the same one
    per_node = Counter(placed.values())
    assert len(per_node) == PER_ZONE  # the zone's nodes and no others: kube-scheduler used 50 of 500
    assert max(per_node.values()) - min(per_node.values()) <= 1

    # One filter thread, as kube-scheduler with parallelism 1: the same workload again, the same node per pod.
    assert place_workload(kube_api, kube_api_kubeconfig) == placed
