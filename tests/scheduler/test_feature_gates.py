"""scheduler.feature_gates: gate tables per Kubernetes minor and --feature-gates checking."""

import pytest

from scheduler import KUBE_SCHEDULER_VERSION
from scheduler.feature_gates import (
    KUBERNETES_GATES,
    SCHEDULER_MINOR,
    FeatureGateError,
    FeatureGates,
    Gate,
    parse_feature_gates,
)


def test_tables_cover_the_lab_minors_and_the_scheduler_minor():
    assert set(KUBERNETES_GATES) == {34, 35, 36}
    assert SCHEDULER_MINOR == int(KUBE_SCHEDULER_VERSION.split(".")[1])
    assert all(len(gates) > 150 for gates in KUBERNETES_GATES.values())


def test_gang_scheduling_gates_arrive_in_1_35_as_alpha_off():
    assert "GangScheduling" not in KUBERNETES_GATES[34]
    assert KUBERNETES_GATES[35]["GangScheduling"] == Gate("GangScheduling", False, "ALPHA", False)
    assert KUBERNETES_GATES[36]["GenericWorkload"] == Gate("GenericWorkload", False, "ALPHA", False)


def test_stage_and_default_follow_the_versioned_specs():
    # DRAAdminAccess: beta (on) from 1.34, GA and locked in 1.36.
    assert KUBERNETES_GATES[35]["DRAAdminAccess"] == Gate("DRAAdminAccess", True, "BETA", False)
    assert KUBERNETES_GATES[36]["DRAAdminAccess"] == Gate("DRAAdminAccess", True, "GA", True)
    # DynamicResourceAllocation: GA in 1.34, locked from 1.35.
    assert not KUBERNETES_GATES[34]["DynamicResourceAllocation"].locked
    assert KUBERNETES_GATES[35]["DynamicResourceAllocation"].locked
    # A gate removed in 1.35 exists in 1.34 only.
    assert "PodIndexLabel" in KUBERNETES_GATES[34] and "PodIndexLabel" not in KUBERNETES_GATES[35]


def test_known_gates_parse_from_the_flag_and_from_a_mapping():
    gates = parse_feature_gates("GenericWorkload=true, GangScheduling=true")
    assert gates.explicit() == {"GangScheduling": True, "GenericWorkload": True}
    assert gates.as_flag() == "GangScheduling=true,GenericWorkload=true"
    assert parse_feature_gates({"GenericWorkload": True, "OpportunisticBatching": False}, 36).as_flag() == \
        "GenericWorkload=true,OpportunisticBatching=false"


def test_go_booleans_are_accepted_like_the_flag():
    assert parse_feature_gates("GenericWorkload=1,OpportunisticBatching=F").explicit() == {
        "GenericWorkload": True, "OpportunisticBatching": False}


def test_defaults_apply_when_not_set():
    gates = parse_feature_gates(None)
    assert gates.explicit() == {} and gates.as_flag() == ""
    assert gates.enabled("OpportunisticBatching") is True  # beta, on, since 1.35
    assert gates.enabled("GangScheduling") is False  # alpha, off
    assert parse_feature_gates("GangScheduling=true,GenericWorkload=true").enabled("GangScheduling") is True
    with pytest.raises(FeatureGateError, match="Nope"):
        gates.enabled("Nope")


def test_unknown_gate_is_refused_with_did_you_mean_naming_the_source():
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates({"GangSchedulng": True}, 36, "lab.yaml kubernetes.feature_gates")
    message = str(err.value)
    assert "lab.yaml kubernetes.feature_gates.GangSchedulng" in message
    assert "did you mean GangScheduling?" in message
    with pytest.raises(FeatureGateError, match="--feature-gates gangscheduling: .*did you mean GangScheduling"):
        parse_feature_gates("gangscheduling=true")


def test_a_gate_of_another_minor_says_which_minors_have_it():
    with pytest.raises(FeatureGateError, match=r"not a feature gate of Kubernetes 1\.34 \(it is one in 1\.35, 1\.36\)"):
        parse_feature_gates("GenericWorkload=true", 34)


def test_locked_gate_set_away_from_its_value_is_refused_and_to_its_value_accepted():
    with pytest.raises(FeatureGateError, match="DynamicResourceAllocation is GA and locked to true in Kubernetes "
                                               r"1\.36; remove it \(or set it to true\)"):
        parse_feature_gates("DynamicResourceAllocation=false")
    assert parse_feature_gates("DynamicResourceAllocation=true").explicit() == {"DynamicResourceAllocation": True}
    assert parse_feature_gates("DynamicResourceAllocation=false", 34).enabled("DynamicResourceAllocation") is False


def test_bad_values_and_malformed_items_are_refused():
    with pytest.raises(FeatureGateError, match="'yes' is not a feature gate value; use true or false"):
        parse_feature_gates("GenericWorkload=yes")
    with pytest.raises(FeatureGateError, match="missing '='"):
        parse_feature_gates("GenericWorkload")
    with pytest.raises(FeatureGateError, match="'on' is not a feature gate value"):
        parse_feature_gates({"GenericWorkload": "on"}, 36, "lab.yaml kubernetes.feature_gates")


def test_every_problem_is_listed_at_once():
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates("Nope=true,GenericWorkload=maybe")
    assert len(str(err.value).splitlines()) == 2


def test_a_gate_needs_the_gates_it_depends_on_from_1_35():
    with pytest.raises(FeatureGateError, match="GangScheduling needs GenericWorkload enabled too.*GenericWorkload=true"):
        parse_feature_gates("GangScheduling=true")
    assert parse_feature_gates("GangScheduling=false").enabled("GangScheduling") is False


def test_unknown_minor_is_refused():
    with pytest.raises(FeatureGateError, match=r"no feature gate table for Kubernetes 1\.30"):
        parse_feature_gates(None, 30)


def test_feature_gates_is_immutable():
    gates = parse_feature_gates("GenericWorkload=true")
    gates.explicit()["GenericWorkload"] = False
    assert gates.enabled("GenericWorkload") is True
    with pytest.raises(AttributeError):
        gates.minor = 35  # type: ignore[misc]
    assert isinstance(gates, FeatureGates)


def test_client_go_and_logging_gates_are_accepted_as_kube_components_accept_them():
    assert parse_feature_gates("WatchListClient=false,LoggingAlphaOptions=true").explicit() == {
        "LoggingAlphaOptions": True, "WatchListClient": False}
    assert KUBERNETES_GATES[34]["WatchListClient"].default is False
    assert KUBERNETES_GATES[35]["WatchListClient"].default is True
