"""NetworkAware's filter and score, with kube-scheduler's way of giving reasons."""

from __future__ import annotations

import pytest

from network_aware import PLUGINS, NetworkAwareArgs
from scheduler.model import PodSpecError
from tests.scheduler.builders import node, pod

PLUGIN = PLUGINS[0]

HIGH_SPEED = {"my-network-preference": "high-speed"}


@pytest.mark.parametrize(
    ("annotations", "labels", "ok", "score"),
    [
        (None, {}, True, 0),
        (None, {"network-topology": "high-speed"}, True, 0),
        (HIGH_SPEED, {"network-topology": "high-speed"}, True, 100),
        (HIGH_SPEED, {"network-topology": "standard"}, False, 0),
        (HIGH_SPEED, {}, False, 0),
        ({"my-network-preference": "standard"}, {}, True, 0),  # another preference: unaffected
        ({"other": "high-speed"}, {}, True, 0),
    ],
)
def test_network_aware(annotations, labels, ok, score):
    p = pod(annotations=annotations)
    n = node("n", labels=labels)
    status = PLUGIN.filter(p, n)
    assert status.ok is ok
    if not ok:
        assert status.reasons == (("node(s) didn't have label network-topology=high-speed "
                                  "requested by pod annotation my-network-preference"),)
    assert PLUGIN.score(p, n) == score


@pytest.mark.parametrize("value", ["", "high speed", "-high-speed", "x" * 64, "fast!"])
def test_network_aware_malformed_annotation_names_it(value):
    p = pod(annotations={"my-network-preference": value})
    with pytest.raises(PodSpecError) as err:
        PLUGIN.filter(p, node())
    assert err.value.field == "metadata.annotations[my-network-preference]"
    assert repr(value) in err.value.reason


def test_network_aware_configurable_keys():
    args = NetworkAwareArgs(annotationKey="example.com/net", labelKey="net", labelValue="rdma")
    p = pod(annotations={"example.com/net": "rdma"})
    assert PLUGIN.filter(p, node(labels={"net": "rdma"}), args).ok
    status = PLUGIN.filter(p, node(labels={"network-topology": "high-speed"}), args)
    assert status.reasons == ("node(s) didn't have label net=rdma requested by pod annotation example.com/net",)
    # the default key is not read
    assert PLUGIN.filter(pod(annotations=HIGH_SPEED), node(), args).ok
