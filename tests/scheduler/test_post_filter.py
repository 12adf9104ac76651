"""The PostFilter plugins for a pod no node fits (scheduler.framework.post_filter.run_post_filters), as kube-scheduler
1.36's RunPostFilterPlugins: DynamicResources' PostFilter, then DefaultPreemption, and what each adds to the
FailedScheduling message."""

from __future__ import annotations

import random

from scheduler.config import parse_config
from scheduler.framework import ClusterView, Profile, build_profiles
from scheduler.framework.post_filter import run_post_filters
from scheduler.model import PodInfo
from tests.scheduler.builders import claim_volume, node, pod


def profile(preemption: bool) -> Profile:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "s"}]}
    if not preemption:
        config["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    return build_profiles(parse_config(config))["s"]


def message(prof: Profile, p: PodInfo, nodes: list) -> tuple[str, object]:
    rng = random.Random(0)
    cluster = ClusterView(nodes)
    result = prof.schedule(p, nodes, rng, cluster)
    assert result.node_name is None
    post = run_post_filters(prof, p, result, nodes, cluster, (), {}, rng)
    return post.message, post.preemption


def test_dynamic_resources_post_filter_text_comes_before_preemption():
    """kube-scheduler 1.36 runs DynamicResources' PostFilter before DefaultPreemption; for a pod without
    claims it says "no new claims to deallocate", and the two are joined by ", "."""
    nodes = [node(n, cpu="2", pods_on_it=[pod(f"{n}-busy", requests={"cpu": "1"})]) for n in ("a", "b")]
    text, outcome = message(profile(True), pod(requests={"cpu": "2"}), nodes)
    assert text == ("0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
                    "0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    assert outcome is not None


def test_without_preemption_the_message_ends_with_dynamic_resources_text():
    text, outcome = message(profile(False), pod(requests={"cpu": "2"}), [node("a", cpu="1")])
    assert text == "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate"
    assert outcome is None


def test_a_pre_filter_rejection_ends_the_post_filters_before_preemption():
    """An earlier plugin's PreFilter refused the pod, so DynamicResources' PreFilter never ran: its PostFilter
    fails ("not found") and preemption does not run (the corpus's repro-missing-claim state)."""
    missing = pod(volumes=[claim_volume("no-such-claim")])
    text, outcome = message(profile(True), missing, [node("a")])
    assert text == '0/1 nodes are available: persistentvolumeclaim "no-such-claim" not found. not found'
    assert outcome is None


def test_preemption_leaves_nodes_too_small_even_when_empty_alone():
    """A node with less cpu than the pod asks for is unresolvable for NodeResourcesFit (kube-scheduler since
    1.34), so preemption calls it not helpful instead of looking for victims there (the corpus's
    repro-taint-and-too-small state)."""
    nodes = [node("small", cpu="1"), node("full", cpu="4", pods_on_it=[pod("busy", requests={"cpu": "3"})])]
    text, _ = message(profile(True), pod(requests={"cpu": "2"}), nodes)
    assert text == ("0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
                    "0/2 nodes are available: 1 No preemption victims found for incoming pod, "
                    "1 Preemption is not helpful for scheduling.")
