"""The scenarios vocabulary (labkit/placement/scenarios.py): the built-in file, the plugin folders' files,
node selectors, and validation that names the file, the scenario and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.paths import PROJECT_ROOT
from labkit.placement.scenarios import NodePick, ScenarioError, load_scenarios, parse_scenarios
from labkit.placement.session import merge_patch

PLUGIN_FILES = [PROJECT_ROOT / "plugins" / n / "scenarios.yaml" for n in ("network_aware", "least_loaded")]


def test_builtin_scenarios_need_no_plugin_of_ours_and_restart_is_opt_in():
    scenarios = load_scenarios()
    assert [s.id for s in scenarios.selected()] == ["unserved", "anti-affinity", "topology-spread", "preemption"]
    assert scenarios.selected(include_restart=True)[-1].id == "restart"
    assert [s.id for s in scenarios.selected(only=["anti-affinity"])] == ["anti-affinity"]
    assert {name for s in scenarios.scenarios for name in s.requires.plugins} == {"DefaultPreemption"}


def test_plugin_files_load_after_the_builtin_ones_and_remember_their_file():
    scenarios = load_scenarios([PROJECT_ROOT / "labkit/placement/scenarios.yaml", *PLUGIN_FILES])
    ids = [s.id for s in scenarios.selected()]
    assert ids[-3:] == ["high-speed", "no-high-speed-node", "spread"]
    high_speed = next(s for s in scenarios.scenarios if s.id == "high-speed")
    assert high_speed.source == str(PLUGIN_FILES[0])
    assert high_speed.pods.patch == {"metadata": {"annotations": {"my-network-preference": "high-speed"}}}


def test_an_id_in_two_files_names_both(tmp_path: Path):
    other = tmp_path / "mine.yaml"
    other.write_text("scenarios:\n  - {id: high-speed, title: t, pods: {count: 1}, expect: {bound: {}}}\n")
    with pytest.raises(ScenarioError, match=f"{other}: scenario 'high-speed' is also in {PLUGIN_FILES[0]}"):
        load_scenarios([PLUGIN_FILES[0], other])


def test_unknown_scenario_is_named():
    with pytest.raises(ScenarioError, match="unknown scenario nope .known: unserved"):
        load_scenarios().selected(only=["nope"])


def scenario(**fields):
    return {"id": "a", "title": "t", "pods": {"count": 1}, "expect": {"bound": {}}, **fields}


@pytest.mark.parametrize(("fields", "message"), [
    ({"pods": {"count": 1, "per_eligible_node": 2}}, "scenario 'a' (scenarios[0]): pods: give exactly one of count"),
    ({"pods": {"count": 2, "extra": 1}}, "scenario 'a' (scenarios[0]): pods: extra goes with per_eligible_node"),
    ({"expect": {"bound_after_restart": {}}}, "set opt_in: include-restart"),
    ({"expect": {}}, "scenario 'a' (scenarios[0]): expect: expect at least one of bound, pending"),
    ({"expect": {"untouched": {}, "bound": {}}}, "expect: untouched goes alone"),
    ({"expect": {"pending": {}, "bound": {}}}, "expect.pending.count: say how many stay Pending"),
    ({"expect": {"pending": {"count": 3}}}, "expect.pending.count: 3 is more than pods.count"),
    ({"expect": {"preempted": 1}}, "expect.preempted needs fill"),
    ({"fill": {"priority": 5}, "pods": {"count": 1, "priority": 5}, "expect": {"preempted": 1}},
     "pods.priority must be above fill.priority"),
    ({"expect": {"spread": {"within": -1}}}, "scenario 'a' (scenarios[0]): expect.spread.within:"),
    ({"expect": {"bound": {"nodes": {"role": "worker", "name": "w"}}}},
     "expect.bound.nodes: give exactly one of name, role or labels"),
    ({"expect": {"bound": {"nodes": {"name": "w", "index": 0}}}}, "expect.bound.nodes: index goes with role"),
    ({"nodes": [{"select": {"role": "master"}, "cordon": True}]}, "scenario 'a' (scenarios[0]): nodes[0].select.role:"),
    ({"nodes": [{"select": {"role": "worker"}}]}, "nodes[0]: set at least one of labels, annotations, taints or cordon"),
    ({"nodes": [{"select": {"role": "worker"}, "taints": [{"key": "k", "effect": "NoWhere"}]}]},
     "nodes[0].taints[0].effect:"),
    ({"pods": {"count": 1, "patch": {"spec": {"nodeName": "w1"}}}},
     "pods.patch.spec.nodeName: set by the run, not by a patch"),
    ({"pods": {"count": 1, "patch": {"metadata": {"name": "x"}}}}, "pods.patch.metadata.name: set by the run"),
    ({"pods": {"count": 1, "patch": {"spec": ["x"]}}}, "pods.patch.spec: must be a mapping"),
    ({"id": "A b"}, "scenario 'A b' (scenarios[0]): id: String should match pattern"),
    ({"colour": "red"}, "scenario 'a' (scenarios[0]): colour: unknown field"),
    ({"requires": {"plugins": ["NetworkAware"]}}, "requires.plugins:"),
    # the gangs' vocabulary: objects, pods.split, bound_all_or_none, none_bound
    ({"objects": [{"kind": "PodGroup", "metadata": {"name": "g"}}]},
     "scenario 'a' (scenarios[0]): objects[0]: apiVersion missing"),
    ({"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}]},
     "objects[0]: metadata.namespace and metadata.generateName are the run's"),
    ({"objects": ["a ConfigMap"]}, "objects[0]: Input should be a valid dictionary"),
    ({"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}] * 2},
     "objects: ConfigMap c given twice"),
    ({"pods": {"count": 3, "split": {"label": "g", "values": ["a", "b"]}}},
     "pods.split: count 3 does not split into 2 equal sets; make count a multiple of 2"),
    ({"pods": {"per_eligible_node": 1, "split": {"label": "g", "values": ["a"]}}}, "pods: split goes with count"),
    ({"pods": {"count": 2, "split": {"label": "g", "values": ["a", "a"]}}}, "pods.split.values: each set needs"),
    ({"pods": {"count": 2, "split": {"label": "g", "values": ["a"]}, "patch": {"metadata": {"labels": {"g": "x"}}}}},
     "split.label: g is also set by patch.metadata.labels"),
    ({"expect": {"bound_all_or_none": {"whole_sets": 2}}},
     "expect.bound_all_or_none.whole_sets: 2 is more than the 1 set(s) of pods"),
    ({"expect": {"bound_all_or_none": {}, "bound": {}}}, "expect: bound_all_or_none goes alone"),
    ({"expect": {"none_bound": {}}}, "expect.none_bound.seconds: required field is missing"),
    ({"expect": {"none_bound": {"seconds": 0}}}, "expect.none_bound.seconds:"),
])
def test_bad_scenarios_name_the_file_scenario_and_field(fields, message):
    with pytest.raises(ScenarioError) as err:
        parse_scenarios({"scenarios": [scenario(**fields)]}, "s.yaml")
    assert message in str(err.value) and str(err.value).startswith("s.yaml:"), str(err.value)


def test_a_bad_file_on_disk_is_named_with_its_path(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios:\n  - {id: x, title: t, pods: {count: 1}, expect: {landed: somewhere}}\n")
    with pytest.raises(ScenarioError, match=rf"(?s){bad}: .*scenario 'x' \(scenarios\[0\]\): expect.landed: unknown field"):
        load_scenarios([bad])


def test_duplicate_ids_are_refused():
    one = scenario()
    with pytest.raises(ScenarioError, match="a repeated"):
        parse_scenarios({"scenarios": [one, one]})


def node(name, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}}


NODES = [node("w2"), node("cp", {"node-role.kubernetes.io/control-plane": ""}), node("w1", {"disk": "ssd"})]


@pytest.mark.parametrize(("select", "picked", "shown"), [
    ({"name": "w2"}, ["w2"], "node w2"),
    ({"name": "gone"}, [], "node gone"),
    ({"role": "worker"}, ["w1", "w2"], "worker nodes"),
    ({"role": "worker", "index": 0}, ["w1"], "worker #0"),
    ({"role": "worker", "index": 1}, ["w2"], "worker #1"),
    ({"role": "worker", "index": 2}, [], "worker #2"),
    ({"role": "control-plane"}, ["cp"], "control-plane nodes"),
    ({"role": "any"}, ["cp", "w1", "w2"], "nodes"),
    ({"labels": {"disk": "ssd"}}, ["w1"], "nodes with disk=ssd"),
])
def test_node_selectors_pick_by_name_role_index_or_labels(select, picked, shown):
    selector = NodePick.model_validate(select)
    assert selector.pick(NODES) == picked
    assert str(selector) == shown


def test_the_patch_is_a_json_merge_patch():
    base = {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}], "x": 1}}
    patch = {"metadata": {"labels": {"b": "2"}}, "spec": {"containers": [{"name": "d"}], "x": None}}
    assert merge_patch(base, patch) == {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}},
                                        "spec": {"containers": [{"name": "d"}]}}
    assert base["spec"]["x"] == 1  # the base is left as it was


def test_the_gang_vocabulary_parses():
    [gang] = parse_scenarios({"scenarios": [scenario(
        objects=[{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "a"},
                  "spec": {"minMember": 2}}],
        pods={"count": 4, "split": {"label": "scheduling.x-k8s.io/pod-group", "values": ["a", "b"]}},
        expect={"bound_all_or_none": {"whole_sets": 1, "settle_seconds": 3}})]}).scenarios
    assert [gang.pods.set_of(i) for i in range(1, 5)] == ["a", "a", "b", "b"]
    assert gang.expect.describe() == "each set bound whole or not at all (1 whole)"
    [quiet] = parse_scenarios({"scenarios": [scenario(expect={"none_bound": {"seconds": 10}})]}).scenarios
    assert quiet.expect.describe() == "none bound for 10 s" and quiet.pods.set_of(1) is None
