"""Which of the tied best nodes a decision takes, and which nodes it looks at, as kube-scheduler 1.36 does
with one filter goroutine: without extenders the first node its selectHost heap pops (Go's container/heap
over the feasible nodes in visiting order), the search resuming at the feasible node after the wanted ones."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from scheduler.framework import Profile
from scheduler.framework.ties import first_in_heap_order
from tests.scheduler.builders import node, pod


def go_heap_first_pop(totals: list[int]) -> int:
    """The original index of the element Go's heap.Pop returns first after heap.Init, with kube-scheduler's
    nodeScoreHeap.Less (a higher total first; every Randomizer 0 without extenders), simulated step by step
    as container/heap does it: Init sifts down every parent from n/2-1 to 0; Pop swaps the root with the
    last element, sifts the new root down over n-1 elements and returns the last one."""
    h = list(enumerate(totals))  # (original index, total)

    def less(i: int, j: int) -> bool:
        return h[i][1] > h[j][1]

    def down(i: int, n: int) -> None:
        while True:
            j = 2 * i + 1
            if j >= n:
                return
            if j + 1 < n and less(j + 1, j):
                j += 1
            if not less(j, i):
                return
            h[i], h[j] = h[j], h[i]
            i = j

    n = len(h)
    for i in range(n // 2 - 1, -1, -1):
        down(i, n)
    h[0], h[n - 1] = h[n - 1], h[0]
    down(0, n - 1)
    return h[n - 1][0]


def test_first_in_heap_order_is_what_go_heap_pops_first() -> None:
    """Every list of up to 8 totals from {0, 1, 2}: the preorder rule picks what the heap pops."""
    for n in range(1, 9):
        for totals in itertools.product((0, 1, 2), repeat=n):
            assert first_in_heap_order(list(totals)) == go_heap_first_pop(list(totals)), totals


def test_first_in_heap_order_on_long_lists() -> None:
    """Lists as long as kube-scheduler scores (up to 600 feasible nodes), few distinct totals."""
    rng = random.Random(7)
    for _ in range(300):
        top = rng.randint(0, 4)
        totals = [rng.randint(0, top) for _ in range(rng.randint(1, 600))]
        assert first_in_heap_order(totals) == go_heap_first_pop(totals), totals


def test_the_heap_does_not_take_the_first_tied_node_in_the_list() -> None:
    assert go_heap_first_pop([1, 0, 2, 2]) == first_in_heap_order([1, 0, 2, 2]) == 3
    assert first_in_heap_order([0, 1, 1, 0, 0, 1]) == 1
    assert first_in_heap_order([0, 0, 5, 0, 0, 0, 0, 5]) == 7  # 7 lies under 1 and 3, left of 2
    assert first_in_heap_order([3, 3, 3]) == 0


def busy(name: str, pods: int):
    """A node holding ``pods`` pods of 1 cpu: NodeResourcesFit scores it below an empty one."""
    return node(name, cpu="8", memory="16Gi", pods_on_it=[pod(f"{name}-{i}", requests={"cpu": "1"})
                                                         for i in range(pods)])


def test_a_decision_takes_the_tied_node_the_heap_pops_first() -> None:
    """Two busy nodes, then two empty ones tied for the best total: kube-scheduler's heap yields the fourth
    node (index 3 is a child of index 1), every time."""
    nodes = [busy("b0", 4), busy("b1", 4), node("e2", cpu="8", memory="16Gi"), node("e3", cpu="8", memory="16Gi")]
    prof = Profile.default()
    results = [prof.schedule(pod(f"p{i}", requests={"cpu": "1"}), nodes, random.Random(i)) for i in range(40)]
    assert results[0].totals[2] == results[0].totals[3] == max(results[0].totals)
    assert {r.node_name for r in results} == {"e3"}


def test_ties_are_broken_uniformly_with_random_ties() -> None:
    """kube-scheduler with an extender gives every node a random tie-breaker: with ``random_ties`` the
    injected rng picks uniformly among the tied nodes."""
    nodes = [node(f"n{i}") for i in range(4)]
    prof = Profile("s", Profile.default().filters, Profile.default().scores, random_ties=True)
    rng = random.Random(2024)
    picks = Counter(prof.schedule(pod(), nodes, rng).node_name for _ in range(4000))
    assert set(picks) == {"n0", "n1", "n2", "n3"}
    # each node expects 1000; a fair pick stays well within +-150 (about 5 standard deviations)
    assert all(850 <= count <= 1150 for count in picks.values()), picks
    chi2 = sum((count - 1000) ** 2 / 1000 for count in picks.values())
    assert chi2 < 16.27  # chi-square, 3 degrees of freedom, p = 0.001
    assert prof.without(["NodePorts"]).random_ties


def test_the_next_search_starts_at_the_feasible_node_after_the_wanted_ones() -> None:
    """400 nodes, every odd one cordoned, 188 wanted (47%): the search stops at the 189th feasible node,
    n376; the 188 rejected nodes before it are reported, none after it, and the next search starts there."""
    nodes = [node(f"n{i:03d}", unschedulable=(i % 2 == 1)) for i in range(400)]
    prof = Profile.default()
    first = prof.schedule(pod("a"), nodes, random.Random(0))
    assert (first.feasible_nodes[0], first.feasible_nodes[-1], len(first.feasible_nodes)) == ("n000", "n374", 188)
    assert first.evaluated_nodes == 376 and len(first.failures) == 188 and "n377" not in first.failures
    assert first.node_name == "n000"  # all tied: the heap's root, the first feasible node
    second = prof.schedule(pod("b"), nodes, random.Random(0))
    assert second.feasible_nodes[0] == second.node_name == "n376"
    assert second.feasible_nodes[-1] == "n350"  # wraps around: n376..n398, n000..n350
    assert second.evaluated_nodes == 376
    third = prof.schedule(pod("c"), nodes, random.Random(0))
    assert third.feasible_nodes[0] == "n352"  # (376 + 376) % 400


def test_without_score_plugins_the_first_feasible_node_is_taken() -> None:
    """kube-scheduler looks for one feasible node when nothing scores: the search moves one node on."""
    prof = Profile("s", Profile.default().filters, [])
    nodes = [node(f"n{i:03d}", unschedulable=(i == 1)) for i in range(150)]
    assert [prof.schedule(pod(f"p{i}"), nodes, random.Random(0)).node_name for i in range(4)] == [
        "n000", "n002", "n003", "n004"]
