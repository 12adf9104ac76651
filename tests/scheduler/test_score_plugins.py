"""Table tests of NodeResourcesBalancedAllocation and ImageLocality scores, each case worked out from
kube-scheduler's formulas (noderesources/balanced_allocation.go, imagelocality/image_locality.go)."""

from __future__ import annotations

import pytest

from scheduler.framework import ClusterView, Profile
from scheduler.plugins import balanced_allocation, image_locality
from scheduler.plugins.balanced_allocation import BalancedAllocationArgs
from scheduler.plugins.image_locality import normalized_image_name
from tests.scheduler.builders import node, pod

MB = 1024 * 1024


def requesting(cpu: str, memory: str, name: str = "p"):
    return pod(name, requests={"cpu": cpu, "memory": memory})


# ----------------------------------------------------------------------------- balanced allocation


@pytest.mark.parametrize(
    ("incoming", "node_cpu", "node_memory", "existing", "expected"),
    [
        # kube-scheduler 1.36: 50 + (50 + balance with the pod - balance without) // 2, where a balance is
        # (1 - std of the fractions requested/allocatable) * 100 rounded down.
        # empty node (balance 100); with the pod cpu 3/4, memory 5/10: std 0.125 -> 87; 50 + 37 // 2 = 68
        (requesting("3", "5Gi"), "4", "10Gi", [], 68),
        # both fractions 0.5: still perfectly balanced -> 50 + 50 // 2 = 75 (the pod changes nothing)
        (requesting("3", "5Gi"), "6", "10Gi", [], 75),
        # pods already there count: cpu 1/4, memory 6/8 -> 75; with the pod cpu 2/4, memory 8/8 -> 75: 75
        (requesting("1", "2Gi"), "4", "8Gi", [requesting("1", "6Gi", "old")], 75),
        # the pod evens the node out: cpu 2/4, memory 0/8 -> 75; with it memory 4/8 -> 100: 50 + 75 // 2 = 87
        (requesting("0", "4Gi"), "4", "8Gi", [requesting("2", "0", "old")], 87),
        # a fraction above 1 is capped: cpu 8/4 -> 1.0, memory 0/8 = 0 -> std 0.5 -> 50; 50 + 0 // 2 = 50
        (pod("p", requests={"cpu": "8"}), "4", "8Gi", [], 50),
    ],
)
def test_balanced_allocation_scores(incoming, node_cpu, node_memory, existing, expected):
    n = node("n", cpu=node_cpu, memory=node_memory, pods_on_it=existing)
    assert balanced_allocation.PLUGIN.score_nodes(incoming, [n]) == [expected]


def test_balanced_allocation_scores_the_change_in_balance():
    """1.36 scores what the pod does to a node's balance, not the balance after placing it: a pod that
    leaves two nodes as balanced as they were scores 75 on both, however balanced each ends up (the corpus's
    repro-balanced-allocation state)."""
    p = requesting("1", "1Gi")
    balanced = node("a", cpu="2", memory="2Gi")  # 1/2 and 1/2 with the pod: balance 100 -> 100
    # 1/4 and 0 (87) -> 2/4 and 1/2 (100): 50 + (50 + 100 - 87) // 2 = 81; before 1.36: 100 on both
    uneven = node("b", cpu="4", memory="2Gi", pods_on_it=[requesting("1", "0", "old")])
    assert balanced_allocation.PLUGIN.score_nodes(p, [balanced, uneven]) == [75, 81]


def test_balanced_allocation_skips_best_effort_pods():
    """A pod requesting neither cpu nor memory is not scored (kube-scheduler's PreScore returns Skip), so
    best-effort pods do not all go to the one node that happens to be balanced."""
    nodes = [node("a", cpu="4", memory="8Gi", pods_on_it=[requesting("2", "1Gi", "old")]), node("b")]
    assert balanced_allocation.PLUGIN.score_nodes(pod("p"), nodes) == [0, 0]
    assert balanced_allocation.PLUGIN.score_nodes(requesting("1", "1Gi"), nodes) != [0, 0]


def test_balanced_allocation_three_resources_use_the_standard_deviation():
    """Over three resources the score is 1 minus the population standard deviation of the fractions:
    cpu 2/4 = 0.5, memory 2/8 = 0.25, example.com/gpu 1/1 = 1.0 -> mean 0.5833, std 0.3118 -> 68; the empty
    node's balance is 100, so 50 + (50 + 68 - 100) // 2 = 59."""
    args = BalancedAllocationArgs(resources=[{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}])
    p = pod("p", requests={"cpu": "2", "memory": "2Gi", "example.com/gpu": "1"})
    n = node("n", cpu="4", memory="8Gi", extra={"example.com/gpu": "1"})
    assert balanced_allocation.PLUGIN.score_nodes(p, [n], args) == [59]
    # a node without the resource leaves it out: cpu 0.5 and memory 0.25 -> std 0.125 -> 87 -> 68
    assert balanced_allocation.PLUGIN.score_nodes(p, [node("m", cpu="4", memory="8Gi")], args) == [68]


# ---------------------------------------------------------------------------------- image locality


@pytest.mark.parametrize(
    ("written", "matched"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("registry:5000/team/app", "registry:5000/team/app:latest"),  # the ':' of a port is not a tag
        ("registry:5000/team/app:v2", "registry:5000/team/app:v2"),
        ("docker.io/library/nginx", "docker.io/library/nginx:latest"),  # no registry is added or removed
    ],
)
def test_image_names_get_latest_when_untagged(written, matched):
    assert normalized_image_name(written) == matched


def image(size_mb: int, *names: str) -> dict:
    return {"names": list(names), "sizeBytes": size_mb * MB}


def with_images(*images: str, init: tuple[str, ...] = ()):
    return pod("p", containers=[{"name": f"c{i}", "image": name} for i, name in enumerate(images)],
               init_containers=[{"name": f"i{i}", "image": name} for i, name in enumerate(init)])


def test_image_locality_scales_size_by_spread_and_thresholds():
    """Two nodes. a holds app (300 MiB) and base (40 MiB); b holds base only.
    On a: app 300 x 1/2 = 150 MiB + base 40 x 2/2 = 40 MiB = 190 MiB; two containers, so the range is
    23..2000 MiB: 100 x (190 - 23) / 1977 = 8. On b: 40 MiB -> 100 x 17 / 1977 = 0."""
    a = node("a", images=[image(300, "example.com/app:v1", "example.com/app@sha256:aa"),
                          image(40, "example.com/base:latest")])
    b = node("b", images=[image(40, "example.com/base:latest")])
    p = with_images("example.com/app:v1", "example.com/base")
    assert image_locality.PLUGIN.score_nodes(p, [a, b]) == [8, 0]


def test_image_locality_counts_init_containers_and_caps_at_the_maximum():
    """Both containers' images held by the only node: 1500 + 1500 MiB, above 2 x 1000 MiB: 100."""
    n = node("n", images=[image(1500, "big:1"), image(1500, "init:1")])
    assert image_locality.PLUGIN.score_nodes(with_images("big:1", init=("init:1",)), [n]) == [100]


def test_image_locality_spread_counts_every_node_not_only_the_scored_ones():
    """The spread divides by every node in the cluster: 1000 MiB held by 1 of 4 nodes is 250 MiB,
    100 x (250 - 23) / (1000 - 23) = 23; scored alone it would be 100."""
    holder = node("a", images=[image(1000, "app:1")])
    others = [node(name) for name in "bcd"]
    assert image_locality.PLUGIN.score_nodes(with_images("app:1"), [holder],
                                             cluster=ClusterView([holder, *others])) == [23]
    assert image_locality.PLUGIN.score_nodes(with_images("app:1"), [holder]) == [100]


def test_image_locality_gives_zero_when_no_node_holds_the_images():
    assert image_locality.PLUGIN.score_nodes(with_images("nginx"), [node("a"), node("b")]) == [0, 0]


def test_default_profile_scores_with_kube_scheduler_weights():
    profile = Profile.default("s")
    assert [(p.name, w) for p, _, w in profile.scores] == [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("DynamicResources", 2), ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1)]
