"""The points outside filter and score: what is refused at registration and at start-up (as kube-scheduler's
framework refuses it), and the rules each point runs by (Extensions), each shown on small plugins."""

from __future__ import annotations

import pytest

from scheduler.config import parse_config
from scheduler.framework import (
    SKIP,
    Args,
    Code,
    CycleState,
    Extensions,
    Handle,
    Plugin,
    PluginError,
    Registry,
    Status,
    in_tree_registry,
)
from scheduler.testing import pod_info

CALLS: list[str] = []


class Counting:
    """Reserve/Unreserve recording their order; fails Reserve for pods labelled fail=<its name>."""

    name = "Counting"

    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def reserve(self, cycle: CycleState, pod, node: str) -> Status | None:
        CALLS.append(f"reserve {self.name}")
        return Status(Code.UNSCHEDULABLE, ("no",)) if pod.labels.get("fail") == self.name else None

    def unreserve(self, cycle: CycleState, pod, node: str) -> None:
        CALLS.append(f"unreserve {self.name}")


class First(Counting):
    name = "First"


class Second(Counting):
    name = "Second"


class ReserveOnly:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def reserve(self, cycle: CycleState, pod, node: str) -> None:
        return None


class Waits:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def permit(self, cycle: CycleState, pod, node: str) -> Status:
        return Status(Code.WAIT, ("later",), timeout=float(pod.labels.get("timeout", "0")))


class Skips:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def bind(self, cycle: CycleState, pod, node: str) -> Status:
        CALLS.append("skip")
        return SKIP


class Binds:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def bind(self, cycle: CycleState, pod, node: str) -> Status | None:
        CALLS.append("bind")
        return None


class Sorts:
    def __init__(self, args: Args, handle: Handle | None) -> None:
        pass

    def sort_key(self, pod, enqueued_at: float) -> str:
        return pod.name


def test_a_reserve_without_its_unreserve_is_refused_naming_the_plugin():
    with pytest.raises(PluginError, match="(?s)plugin 'Half' is refused:.*reserve and unreserve come together"):
        Registry([Plugin("Half", setup=ReserveOnly)], "my_plugins.py")


@pytest.mark.parametrize(("fields", "problem"), [
    ({"setup": lambda args, handle: None}, "setup .*: give a class"),
    ({"watches": ("podgroups",)}, "watches: 'podgroups' is not group/version/resource"),
    ({"writes": ("Pods",)}, "writes: 'Pods' is not group/version/resource"),
])
def test_bad_declarations_are_refused(fields, problem):
    with pytest.raises(PluginError, match=problem):
        Registry([Plugin("Bad", **{"setup": Sorts, **fields})], "my_plugins.py")


def _config(registry: Registry, *profiles: dict) -> object:
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": list(profiles)}, "config.yaml", registry)


REGISTRY = in_tree_registry().with_plugins(
    [Plugin("First", setup=First), Plugin("Second", setup=Second), Plugin("Waits", setup=Waits),
     Plugin("Skips", setup=Skips), Plugin("Binds", setup=Binds), Plugin("Sorts", setup=Sorts)], "test")


def test_two_queue_sorts_no_bind_and_different_queue_sorts_are_refused_at_start():
    two = _config(REGISTRY, {"schedulerName": "a", "plugins": {"queueSort": {"enabled": ["Sorts"]}}})
    assert two.point_problems() == [
        ("profiles[0].plugins.queueSort: one queue sort plugin required for profile a, found 2 (PrioritySort, "
         "Sorts): disable the others, e.g. queueSort.disabled: [{name: PrioritySort}]")]
    unbound = _config(REGISTRY, {"schedulerName": "a", "plugins": {"bind": {"disabled": ["*"]}}})
    assert unbound.point_problems() == [
        ("profiles[0].plugins.bind: at least one bind plugin is needed for profile a (DefaultBinder binds through "
         "the API)")]
    differ = _config(REGISTRY, {"schedulerName": "a"},
                     {"schedulerName": "b", "plugins": {"queueSort": {"enabled": ["Sorts"], "disabled": ["*"]}}})
    assert differ.point_problems() == [
        "profiles: queueSort must be the same for all profiles (found PrioritySort; Sorts)"]


def test_a_plugin_enabled_at_a_point_it_lacks_is_refused_by_the_field():
    with pytest.raises(ValueError, match=r"plugins.permit.enabled\[0\]: plugin First does not extend Permit plugin "
                                         r"\(it has: reserve\)"):
        _config(REGISTRY, {"schedulerName": "a", "plugins": {"permit": {"enabled": ["First"]}}})


def _extensions(*names: str, **points: dict) -> Extensions:
    config = _config(REGISTRY, {"schedulerName": "a", "plugins": {"multiPoint": {"enabled": list(names)}, **points}})
    return Extensions(config.resolved_profiles()[0].points, None)


def test_unreserve_runs_every_reserve_plugin_in_reverse_after_a_failure():
    CALLS.clear()
    ext = _extensions("First", "Second")
    pod = pod_info(labels={"fail": "First"})
    status = ext.reserve(CycleState(), pod, "n1")
    assert (status.plugin, status.reason) == ("First", "no")
    ext.unreserve(CycleState(), pod, "n1")
    assert CALLS == ["reserve First", "unreserve Second", "unreserve First"]  # Second never reserved: still undone


@pytest.mark.parametrize(("timeout", "problem"), [
    ("0", "returned WAIT with a timeout of 0.0s"),
    ("901", "returned WAIT with a timeout of 901.0s"),
])
def test_a_wait_without_a_timeout_or_over_fifteen_minutes_fails_the_pod_naming_the_plugin(timeout, problem):
    result = _extensions("Waits").permit(CycleState(), pod_info(labels={"timeout": timeout}), "n1")
    assert result.rejection is not None and result.rejection.code is Code.ERROR
    assert result.rejection.reason.startswith(f'running Permit plugin "Waits": {problem}')


def test_a_wait_within_the_cap_is_collected():
    assert _extensions("Waits").permit(CycleState(), pod_info(labels={"timeout": "30"}), "n1").waits == {"Waits": 30.0}


def test_bind_passes_over_skip_to_the_next_plugin_and_all_skipping_is_an_error():
    CALLS.clear()
    # As in kube-scheduler, a multiPoint plugin (DefaultBinder) runs before those named only at the point: a plugin
    # of one's own binds once DefaultBinder is disabled.
    ext = _extensions(bind={"enabled": ["Skips", "Binds"], "disabled": ["DefaultBinder"]})
    status = ext.bind(CycleState(), pod_info(), "n1")
    assert (status.ok, status.plugin, CALLS) == (True, "Binds", ["skip", "bind"])
    only_skips = _config(REGISTRY, {"schedulerName": "a", "plugins": {"bind": {"enabled": ["Skips"],
                                                                                  "disabled": ["*"]}}})
    status = Extensions(only_skips.resolved_profiles()[0].points, None).bind(CycleState(), pod_info(), "n1")
    assert status.code is Code.ERROR and "each returned SKIP" in status.reason


def test_pods_no_binding_point_concerns_are_bound_the_plain_way():
    """DynamicResources (default profile) says it has nothing to do for a pod without claims (``concerns``): such
    a pod skips the binding-cycle machinery; a pod with a claim, or any pod once a plugin without ``concerns``
    has a binding point, does not."""
    plain = pod_info(name="plain")
    claiming = pod_info({"metadata": {"name": "gpu", "namespace": "default", "uid": "u"},
                         "spec": {"containers": [{"name": "c"}],
                                  "resourceClaims": [{"name": "g", "resourceClaimName": "gpu-claim"}]}})
    default = _extensions()
    assert default.has_binding_points
    assert (default.binding_points_for(plain), default.binding_points_for(claiming)) == (False, True)
    assert _extensions("First").binding_points_for(plain)
