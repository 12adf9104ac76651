"""The scenarios file (labkit/placement/scenarios.yaml) and its validation."""

from __future__ import annotations

import pytest

from labkit.placement.scenarios import ScenarioError, load_scenarios, parse_scenarios


def test_bundled_scenarios_cover_the_six_cases_with_restart_opt_in():
    scenarios = load_scenarios()
    assert [s.expect.placement for s in scenarios.scenarios] == [
        "labelled-node", "least-loaded-spread", "ignored", "unschedulable", "one-per-node", "even-spread",
        "preempts", "bound-after-restart"]
    assert [s.id for s in scenarios.selected()] == ["high-speed", "spread", "unserved", "no-high-speed-node",
                                                    "anti-affinity", "topology-spread", "preemption"]
    assert scenarios.selected(include_restart=True)[-1].id == "restart"
    assert [s.id for s in scenarios.selected(only=["spread"])] == ["spread"]


def test_unknown_scenario_is_named():
    with pytest.raises(ScenarioError, match="unknown scenario nope .known: high-speed"):
        load_scenarios().selected(only=["nope"])


@pytest.mark.parametrize(("scenario", "message"), [
    ({"id": "a", "title": "t", "pods": {"count": 1}, "expect": {"placement": "labelled-node"}},
     "scenarios[0]: labelled-node needs high_speed_label: applied"),
    ({"id": "a", "title": "t", "pods": {"count": 1, "per_eligible_node": 2}, "expect": {"placement": "ignored"}},
     "scenarios[0].pods: give exactly one of count or per_eligible_node"),
    ({"id": "a", "title": "t", "pods": {"count": 1}, "expect": {"placement": "bound-after-restart"}},
     "set opt_in: include-restart"),
    ({"id": "a", "title": "t", "pods": {"count": 2}, "expect": {"placement": "preempts"}},
     "scenarios[0]: preempts needs pods.count: 1"),
    ({"id": "A b", "title": "t", "pods": {"count": 1}, "expect": {"placement": "ignored"}}, "scenarios[0].id"),
    ({"id": "a", "title": "t", "pods": {"count": 1}, "expect": {"placement": "ignored"}, "colour": "red"},
     "scenarios[0].colour: unknown field"),
    ({"id": "a", "title": "t", "pods": {"per_eligible_node": 2, "anti_affinity": "required"},
      "expect": {"placement": "one-per-node"}}, "one-per-node needs pods.anti_affinity: required and pods.per_eligible_node: 1"),
    ({"id": "a", "title": "t", "pods": {"per_eligible_node": 2}, "expect": {"placement": "even-spread"}},
     "even-spread needs pods.topology_spread"),
    ({"id": "a", "title": "t", "pods": {"count": 2, "extra": 1}, "expect": {"placement": "ignored"}},
     "scenarios[0].pods: extra goes with per_eligible_node"),
])
def test_bad_scenarios_name_the_field(scenario, message):
    with pytest.raises(ScenarioError) as err:
        parse_scenarios({"scenarios": [scenario]}, "s.yaml")
    assert message in str(err.value) and str(err.value).startswith("s.yaml:")


def test_duplicate_ids_are_refused():
    one = {"id": "a", "title": "t", "pods": {"count": 1, "scheduler": "unserved"}, "expect": {"placement": "ignored"}}
    with pytest.raises(ScenarioError, match="a repeated"):
        parse_scenarios({"scenarios": [one, one]})
