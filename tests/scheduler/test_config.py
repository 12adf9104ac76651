"""KubeSchedulerConfiguration subset: valid configs resolve to the expected plugins, weights and args;
every invalid case stops with a message naming the field."""

from __future__ import annotations

import copy

import pytest

from scheduler.config import (
    ConfigError,
    load_config,
    parse_bind_address,
    parse_config,
    parse_duration,
)
from tests import bundled_plugins

NetworkAwareArgs = bundled_plugins.registry()["NetworkAware"].args
LeastLoadedArgs = bundled_plugins.registry()["LeastLoaded"].args

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
# kube-scheduler's default filter order (default_plugins.go; DynamicResources goes before DefaultPreemption)
DEFAULT_FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "PodTopologySpread", "InterPodAffinity", "DynamicResources"]
# kube-scheduler's default weights (pkg/scheduler/apis/config/v1/default_plugins.go), for the plugins we have
DEFAULT_SCORES = [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
                  ("InterPodAffinity", 2), ("DynamicResources", 2), ("NodeResourcesBalancedAllocation", 1),
                  ("ImageLocality", 1)]

NETWORK_AWARE_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: "/etc/kubernetes/scheduler.conf"
profiles:
  - schedulerName: my-custom-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: "NetworkAware"
"""


def config(**fields):
    return {**HEAD, **fields}


def resolved(profile: dict, **top):
    cfg = parse_config(config(profiles=[profile], **top), "config", bundled_plugins.registry())
    r = cfg.resolved_profiles()[0]
    return [p.name for p, _ in r.filters], [(p.name, w) for p, _, w in r.scores], r


def test_network_aware_config_file(tmp_path):
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(NETWORK_AWARE_YAML)
    cfg = load_config(path, bundled_plugins.registry())
    assert cfg.leaderElection.leaderElect is False
    assert cfg.clientConnection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert (cfg.clientConnection.qps, cfg.clientConnection.burst) == (50.0, 100)
    r = cfg.resolved_profiles()[0]
    assert r.scheduler_name == "my-custom-scheduler"
    assert [p.name for p, _ in r.filters] == [*DEFAULT_FILTERS, "NetworkAware"]
    assert [(p.name, w) for p, _, w in r.scores] == [*DEFAULT_SCORES, ("NetworkAware", 1)]
    assert cfg.lease_name == "my-custom-scheduler"  # never kube-scheduler's own Lease
    assert cfg.healthzBindAddress == "0.0.0.0:10251"


@pytest.mark.parametrize(
    ("plugins", "filters", "scores"),
    [
        ({}, DEFAULT_FILTERS, DEFAULT_SCORES),
        ({"multiPoint": {"enabled": [{"name": "NetworkAware", "weight": 5}]}},
         [*DEFAULT_FILTERS, "NetworkAware"], [*DEFAULT_SCORES, ("NetworkAware", 5)]),
        ({"score": {"enabled": [{"name": "LeastLoaded", "weight": 4}]}},
         DEFAULT_FILTERS, [*DEFAULT_SCORES, ("LeastLoaded", 4)]),
        # re-listing a default in multiPoint changes its weight in place (kube-scheduler's merge)
        ({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 1}]}},
         DEFAULT_FILTERS, [("TaintToleration", 1), *DEFAULT_SCORES[1:]]),
        # named under score: overrides the multiPoint entry there, moved first
        ({"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 7}]}},
         DEFAULT_FILTERS, [("NodeResourcesFit", 7), *(s for s in DEFAULT_SCORES if s[0] != "NodeResourcesFit")]),
        ({"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "LeastLoaded"}]}},
         DEFAULT_FILTERS, [("LeastLoaded", 1)]),
        ({"score": {"disabled": ["*"], "enabled": ["LeastLoaded"]}}, DEFAULT_FILTERS, [("LeastLoaded", 1)]),
        ({"filter": {"disabled": [{"name": "NodePorts"}, {"name": "NodeName"}]}},
         [f for f in DEFAULT_FILTERS if f not in ("NodePorts", "NodeName")],
         DEFAULT_SCORES),
        ({"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "NetworkAware"}, {"name": "LeastLoaded"}]}},
         ["NetworkAware"], [("NetworkAware", 1), ("LeastLoaded", 1)]),
        ({"multiPoint": {"disabled": [{"name": "TaintToleration"}]}},
         [f for f in DEFAULT_FILTERS if f != "TaintToleration"], DEFAULT_SCORES[1:]),
        ({"multiPoint": {"enabled": [{"name": "NetworkAware"}]}, "score": {"disabled": [{"name": "NetworkAware"}]}},
         [*DEFAULT_FILTERS, "NetworkAware"], DEFAULT_SCORES),
    ],
)
def test_plugin_sets_resolve_like_kube_scheduler(plugins, filters, scores):
    got_filters, got_scores, _ = resolved({"schedulerName": "s", "plugins": plugins})
    assert got_filters == filters
    assert got_scores == scores


def test_plugin_args():
    _, _, r = resolved({
        "schedulerName": "s",
        "plugins": {"multiPoint": {"enabled": [{"name": "NetworkAware"}, {"name": "LeastLoaded"}]}},
        "pluginConfig": [
            {"name": "NetworkAware", "args": {"annotationKey": "example.com/net", "labelValue": "rdma"}},
            {"name": "LeastLoaded", "args": {"kind": "LeastLoadedArgs", "mode": "requestedResources",
                                             "strategy": "MostAllocated"}},
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
        ],
    })
    args = {p.name: a for p, a, _ in r.scores}
    assert args["NetworkAware"] == NetworkAwareArgs(annotationKey="example.com/net", labelValue="rdma")
    assert args["LeastLoaded"].mode == "requestedResources" and args["LeastLoaded"].strategy == "MostAllocated"
    assert args["NodeResourcesFit"].scoringStrategy.type == "MostAllocated"
    assert LeastLoadedArgs() == LeastLoadedArgs(mode="podCount", strategy="LeastAllocated")


def test_top_level_fields_and_several_profiles():
    cfg = parse_config(config(
        profiles=[{"schedulerName": "a", "percentageOfNodesToScore": 30}, {"schedulerName": "b"}],
        percentageOfNodesToScore=10,
        leaderElection={"leaseDuration": "1m", "renewDeadline": "45s", "retryPeriod": "5s",
                        "resourceNamespace": "sched", "resourceName": "lab-lease"},
        clientConnection={"qps": 20, "burst": 40},
        healthzBindAddress="127.0.0.1:8080", metricsBindAddress="[::]:9090",
    ))
    a, b = cfg.resolved_profiles()
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (30, 10)
    le = cfg.leaderElection
    assert (le.leaseDuration, le.renewDeadline, le.retryPeriod) == (60.0, 45.0, 5.0)
    assert cfg.lease_name == "lab-lease" and le.resourceNamespace == "sched"
    assert parse_bind_address(cfg.metricsBindAddress) == ("::", 9090)


GOOD = config(profiles=[{"schedulerName": "s"}])


def broken(path: list, value) -> dict:
    """GOOD with the value at path replaced (or added)."""
    doc = copy.deepcopy(GOOD)
    target = doc
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (broken(["apiVersion"], "kubescheduler.config.k8s.io/v1beta3"), "apiVersion"),
        (broken(["kind"], "Config"), "kind"),
        (broken(["parallelism"], 16), "parallelism: unknown field"),
        (broken(["profiles"], []), "profiles"),
        ({**HEAD}, "profiles: required field is missing"),
        (broken(["profiles", 0, "scheduler"], "x"), "profiles[0].scheduler: unknown field"),
        (config(profiles=[{}]), "profiles[0].schedulerName: required field is missing"),
        (config(profiles=[{"schedulerName": "Bad Name"}]), "profiles[0].schedulerName"),
        (config(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]), "schedulerName a used by more than one"),
        (broken(["profiles", 0, "plugins"], {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}),
         "profiles[0].plugins.multiPoint.enabled[0]: unknown plugin 'Coscheduling'"),
        (broken(["profiles", 0, "plugins"], {"filter": {"disabled": [{"name": "NodePort"}]}}),
         "profiles[0].plugins.filter.disabled[0]: unknown plugin 'NodePort'"),
        (broken(["profiles", 0, "plugins"], {"filter": {"enabled": [{"name": "LeastLoaded"}]}}),
         "profiles[0].plugins.filter.enabled[0]: plugin LeastLoaded does not extend Filter plugin (it has: score)"),
        (broken(["profiles", 0, "plugins"], {"score": {"enabled": [{"name": "NodePorts"}]}}),
         "profiles[0].plugins.score.enabled[0]: plugin NodePorts does not extend Score plugin (it has: filter)"),
        (broken(["profiles", 0, "plugins"], {"preFilter": {}}), "profiles[0].plugins.preFilter: unknown field"),
        (broken(["profiles", 0, "plugins"], {"score": {"enabled": [{"name": "LeastLoaded", "weight": -1}]}}),
         "profiles[0].plugins.score.enabled[0].weight"),
        (broken(["profiles", 0, "plugins"], {"multiPoint": {"enabled": ["NetworkAware", "NetworkAware"]}}),
         "profiles[0].plugins.multiPoint.enabled: NetworkAware is listed twice"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "Nope", "args": {}}]),
         "profiles[0].pluginConfig[0].name: unknown plugin 'Nope'"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "LeastLoaded", "args": {"mode": "cpu"}}]),
         "profiles[0].pluginConfig[0].args.mode"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "LeastLoaded", "args": {"mood": "x"}}]),
         "profiles[0].pluginConfig[0].args.mood: unknown field"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "NetworkAware", "args": {"labelValue": "not valid"}}]),
         "profiles[0].pluginConfig[0].args.labelValue"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "NodePorts", "args": {"x": 1}}]),
         "profiles[0].pluginConfig[0].args.x: unknown field"),
        (broken(["profiles", 0, "pluginConfig"], [{"name": "LeastLoaded"}, {"name": "LeastLoaded"}]),
         "profiles[0].pluginConfig[1].name: LeastLoaded is configured twice"),
        (broken(["profiles", 0, "percentageOfNodesToScore"], 101), "profiles[0].percentageOfNodesToScore"),
        (broken(["percentageOfNodesToScore"], -1), "percentageOfNodesToScore"),
        (broken(["leaderElection"], {"leaseDuration": "soon"}), "leaderElection.leaseDuration"),
        (broken(["leaderElection"], {"leaseDuration": 15}), "leaderElection.leaseDuration"),
        (broken(["leaderElection"], {"leaseDuration": "10s", "renewDeadline": "10s"}),
         "leaderElection: leaseDuration must be greater than renewDeadline"),
        (broken(["leaderElection"], {"resourceLock": "endpoints"}), "leaderElection.resourceLock"),
        (broken(["leaderElection"], {"leaderElect": "maybe"}), "leaderElection.leaderElect"),
        (broken(["clientConnection"], {"qps": -5}), "clientConnection.qps"),
        (broken(["clientConnection"], {"burst": 0}), "clientConnection.burst"),
        (broken(["clientConnection"], {"contentType": "application/json"}), "clientConnection.contentType"),
        (broken(["healthzBindAddress"], "localhost"), "healthzBindAddress"),
        (broken(["metricsBindAddress"], "0.0.0.0:99999"), "metricsBindAddress"),
    ],
)
def test_invalid_config_names_the_field(doc, expected):
    with pytest.raises(ConfigError) as err:
        parse_config(doc, "cfg.yaml", bundled_plugins.registry())
    message = str(err.value)
    assert message.startswith("cfg.yaml: invalid scheduler configuration")
    assert expected in message


def test_several_problems_reported_at_once():
    doc = broken(["profiles", 0, "plugins"], {"multiPoint": {"enabled": ["A", "B"]}})
    doc["parallelism"] = 1
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    text = str(err.value)
    assert "enabled[0]: unknown plugin 'A'" in text and "enabled[1]: unknown plugin 'B'" in text
    assert "parallelism: unknown field" in text


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="missing.yaml: cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="expected a KubeSchedulerConfiguration mapping"):
        load_config(empty)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("2.5s", 2.5), ("100us", 1e-4)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "15 s", "1d", "-1s"])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)
