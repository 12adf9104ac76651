"""Unit tests of the NodeCost plugin, with the helpers kubelab ships for plugin authors (scheduler.testing):
real PodInfo and NodeInfo objects built from what the API server would send. Run: pytest node_cost/"""

import pytest

from node_cost import PLUGINS
from scheduler.model import PodSpecError
from scheduler.testing import node_info, pod_info

NODE_COST = PLUGINS[0]


def cheap(name="cheap"):
    return node_info(name=name, annotations={"example.com/hourly-cost": "0.10"})


def dear(name="dear"):
    return node_info(name=name, annotations={"example.com/hourly-cost": "0.50"})


def test_a_pod_with_a_cap_fits_only_nodes_at_or_below_it():
    pod = pod_info(annotations={"example.com/max-hourly-cost": "0.30"})
    assert NODE_COST.filter(pod, cheap()).ok
    verdict = NODE_COST.filter(pod, dear())
    assert not verdict.ok
    assert verdict.reasons == ("node(s) cost more than the pod's example.com/max-hourly-cost",)


def test_a_node_of_unknown_cost_does_not_fit_a_capped_pod():
    pod = pod_info(annotations={"example.com/max-hourly-cost": "0.30"})
    assert NODE_COST.filter(pod, node_info(name="plain")).reasons == (
        "node(s) had no readable example.com/hourly-cost annotation",)


def test_a_pod_without_a_cap_fits_every_node():
    assert NODE_COST.filter(pod_info(), dear()).ok


def test_cheaper_nodes_score_higher_and_unknown_cost_lowest():
    nodes = [dear(), cheap(), node_info(name="plain")]
    assert NODE_COST.score_nodes(pod_info(), nodes) == [0, 100, 0]


def test_a_malformed_cap_is_the_pods_mistake_named_by_its_field():
    with pytest.raises(PodSpecError, match="max-hourly-cost"):
        NODE_COST.filter(pod_info(annotations={"example.com/max-hourly-cost": "cheap"}), cheap())
