"""The KubeSchedulerConfiguration rendered for kube-scheduler in extender mode, checked against
kube-scheduler's v1 fields and types (k8s.io/kube-scheduler/config/v1 types.go, component-base's
LeaderElectionConfiguration) and its validation rules: the check accepts what we render and refuses, by
field, what kube-scheduler's strict decoder or validation would refuse. No kube-scheduler runs here."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import yaml

from labdef.lab import load_lab, with_changes
from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.kube_scheduler_config import check_kube_scheduler_config
from labkit.scheduler_deploy.manifests import render_kube_scheduler_config


@pytest.fixture(scope="module")
def rendered() -> dict:
    lab = with_changes(load_lab(), {"scheduler.mode": "extender"})
    return yaml.safe_load(render_kube_scheduler_config(lab))


def test_the_rendered_configuration_passes(rendered: dict) -> None:
    check_kube_scheduler_config(rendered)


def _set(path: str, value: object) -> Callable[[dict], None]:
    def change(config: dict) -> None:
        *parents, leaf = path.split(".")
        target = config
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        if value is DELETE:
            del target[leaf]
        else:
            target[leaf] = value
    return change


DELETE = object()

REFUSED = {
    "old API version": (_set("apiVersion", "kubescheduler.config.k8s.io/v1beta3"), "apiVersion: Input should be"),
    "weight 0 with a prioritize verb": (_set("extenders.0.weight", 0), "must be positive for an extender with a prioritizeVerb"),
    "weight as a string": (_set("extenders.0.weight", "2"), "extenders[0].weight: Input should be a valid integer"),
    "bool as a string": (_set("extenders.0.nodeCacheCapable", "true"), "extenders[0].nodeCacheCapable: Input should be a valid boolean"),
    "timeout without unit": (_set("extenders.0.httpTimeout", "5"), "extenders[0].httpTimeout: '5' is not a duration"),
    "timeout as a number": (_set("extenders.0.httpTimeout", 5), "extenders[0].httpTimeout: Input should be a valid string"),
    "misspelt field": (_set("extenders.0.nodeCacheable", True), "extenders[0].nodeCacheable: unknown field"),
    "url without scheme": (_set("extenders.0.urlPrefix", "127.0.0.1:8888"), "extenders[0].urlPrefix: String should match"),
    "endpoints lock": (_set("leaderElection.resourceLock", "endpoints"), "leaderElection.resourceLock: Input should be 'leases'"),
    "no lease name": (_set("leaderElection.resourceName", ""), "leaderElection.resourceName: String should have at least 1"),
    "no profile": (_set("profiles", []), "profiles: List should have at least 1 item"),
    "profile without name": (_set("profiles.0.schedulerName", DELETE), "profiles[0].schedulerName: required field is missing"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_what_kube_scheduler_would_refuse_is_refused_by_field(rendered: dict, case: str) -> None:
    change, expected = REFUSED[case]
    config = copy.deepcopy(rendered)
    change(config)
    with pytest.raises(DeployError) as err:
        check_kube_scheduler_config(config)
    assert expected in str(err.value), str(err.value)


def test_two_profiles_with_one_name_are_refused(rendered: dict) -> None:
    config = copy.deepcopy(rendered)
    config["profiles"].append(dict(config["profiles"][0]))
    with pytest.raises(DeployError, match=r"profiles\[1\].schedulerName: 'my-custom-scheduler' is served by another"):
        check_kube_scheduler_config(config)
