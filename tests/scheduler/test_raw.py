"""The object as read: PodInfo.raw / NodeInfo.raw are read-only views of the API dicts, field paths name one
field of them, and a plugin's requeue_on_fields is checked when the plugin is built."""

from __future__ import annotations

import pytest

from scheduler.framework import Plugin, PluginError, Registry
from scheduler.framework.cluster_event import ClusterEvent
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.raw import MISSING, FieldPath
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from tests.scheduler.builders import node_obj, pod, pod_obj


def test_plugins_read_any_field_through_raw():
    p = pod("p", annotations={"example.com/tier": "gold"}, extra_spec={"runtimeClassName": "gvisor"})
    assert p.raw["metadata"]["annotations"]["example.com/tier"] == "gold"
    assert p.raw["spec"].get("runtimeClassName") == "gvisor"
    assert p.raw["spec"]["containers"][0]["image"] == "busybox"
    obj = node_obj("n")
    obj["metadata"]["annotations"] = {"example.com/rack": "r1"}
    n = NodeInfo.from_api(obj)
    assert n.raw["metadata"]["annotations"] == {"example.com/rack": "r1"}
    assert n.clone().raw["metadata"]["name"] == "n"  # a snapshot's clone reads the same object


def test_raw_cannot_change_the_object():
    p = pod("p", annotations={"a": "1"}, tolerations=[{"key": "k", "operator": "Exists"}])
    with pytest.raises(TypeError):
        p.raw["metadata"]["annotations"]["a"] = "2"  # type: ignore[index]
    with pytest.raises(TypeError):
        p.raw["spec"]["tolerations"][0]["key"] = "x"  # type: ignore[index]
    with pytest.raises(AttributeError):
        p.raw["spec"]["tolerations"].append({})  # type: ignore[attr-defined]
    assert p.raw["metadata"]["annotations"]["a"] == "1"
    copy = p.raw["metadata"].to_dict()  # a copy the caller owns
    copy["annotations"]["a"] = "2"
    assert p.raw["metadata"]["annotations"]["a"] == "1"


def test_a_pod_built_without_an_object_reads_empty():
    assert dict(PodInfo(uid="u", namespace="d", name="p").raw) == {}
    assert dict(NodeInfo("n").raw) == {}


def test_counted_pods_keep_their_object_only_when_a_plugin_reads_it():
    bound = pod_obj("b", node_name="n", annotations={"a": "1"})
    for keep in (False, True):
        cache = Cache(keep_pod_objects=keep)
        handlers = CacheHandlers(cache)
        handlers.node_changed(node_obj("n"))
        handlers.pod_changed(bound)
        assumed = cache.assume(pod("p", annotations={"a": "2"}), "n")
        for counted in (cache.node("n").pods["uid-b"], assumed):
            if keep:
                assert counted.raw["metadata"]["annotations"]["a"] in ("1", "2")
            else:
                with pytest.raises(LookupError, match="reads_counted_pods_raw=True"):
                    counted.raw["metadata"]


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("spec.tolerations", ("spec", "tolerations")),
        ("metadata.annotations['example.com/rack']", ("metadata", "annotations", "example.com/rack")),
        ('metadata.labels["a.b/c"]', ("metadata", "labels", "a.b/c")),
        ("metadata.labels.app", ("metadata", "labels", "app")),
    ],
)
def test_field_paths(text, steps):
    path = FieldPath(text)
    assert path.steps == steps
    assert FieldPath(path.text) == path  # its canonical text reads back to the same path


@pytest.mark.parametrize("text", ["", ".spec", "spec..x", "metadata.labels[app]", "spec x",
                                  "metadata.annotations['a'"])
def test_field_path_errors_say_where(text):
    with pytest.raises(ValueError, match="field path"):
        FieldPath(text)


def test_field_path_reads_and_compares():
    path = FieldPath("metadata.annotations['r']")
    assert path.read({"metadata": {"annotations": {"r": "1"}}}) == "1"
    assert path.read({"metadata": {}}) is MISSING
    assert path.read({"metadata": {"annotations": "not a map"}}) is MISSING
    assert path.changed({"metadata": {}}, {"metadata": {"annotations": {"r": ""}}})
    assert not path.changed({"metadata": {"annotations": {"r": "1", "o": "x"}}},
                            {"metadata": {"annotations": {"r": "1"}}})


def test_requeue_on_fields_are_checked_when_the_plugin_is_built():
    plugin = Plugin("Rack", pre_filter=lambda pod, args: None,
                    requeue_on_fields=("node.metadata.annotations['r']", "pod.spec.runtimeClassName"))
    assert plugin.node_fields == {FieldPath("metadata.annotations['r']")}
    assert plugin.pod_fields == {FieldPath("spec.runtimeClassName")}
    assert plugin.requeue_on == ClusterEvent.NODE_ADDED  # fields declared: a new node, and those fields
    assert Plugin("Any", pre_filter=lambda pod, args: None).requeue_on == ClusterEvent.ANY
    with pytest.raises(ValueError, match=r"plugin Rack: requeue_on_fields: 'metadata.labels' must start with node"):
        Plugin("Rack", requeue_on_fields=("metadata.labels",))
    with pytest.raises(ValueError, match="plugin Rack: requeue_on_fields: field path 'node.metadata.labels\\[x\\]'"):
        Plugin("Rack", requeue_on_fields=("node.metadata.labels[x]",))
    with pytest.raises(TypeError, match="not one string"):
        Plugin("Rack", requeue_on_fields="node.spec.taints")  # type: ignore[arg-type]


def test_a_score_plugin_declaring_requeue_fields_is_refused_at_registration():
    plugin = Plugin("Rank", pre_score=lambda pod, args: None, score_node=lambda state, node: 0,
                    requeue_on_fields=("node.metadata.annotations['r']",))
    with pytest.raises(PluginError, match="plugin 'Rank' is refused:\n  requeue_on_fields without a filter"):
        Registry([plugin], "my_plugins.py")
