"""Why a pod went (or did not go) where it did: for each node, the filter reasons and weighted scores the
bundled scheduler computes for that pod, from the cluster's current nodes and pods.

The plugins, their args and weights are the scheduler's own (`scheduler.framework.Profile` built from a
KubeSchedulerConfiguration), read from the first of:
1. the scheduler's ConfigMap in the cluster (`<name>-config` in the scheduler's namespace, key
   config.yaml) -- what the running scheduler was started with;
2. a file given with --scheduler-config (a scheduler running beside the cluster);
3. the config `deploy-scheduler` would render from the lab definition.

In extender mode the ConfigMap also holds kube-scheduler's configuration (key kube-scheduler.yaml) and
config.yaml is the extender's: the verdicts are then the extender's own, computed here in-process with its
plugins and config (the extender listens on its pod's loopback, which nothing outside the pod can reach
without port-forward rights), not kube-scheduler's, whose default plugins run before it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.kube import Kube, pod_path
from labkit.scheduler_deploy.manifests import render_config
from scheduler.config import ConfigError, KubeSchedulerConfiguration, load_config, parse_config
from scheduler.framework import Profile, ScheduleResult
from scheduler.model import LENIENT, NodeInfo, PodInfo, PodSpecError
from scheduler.plugins import ClusterView
from scheduler.plugins.least_loaded import LeastLoadedArgs
from scheduler.plugins.network_aware import NetworkAwareArgs

CONFIG_KEY = "config.yaml"
KUBE_SCHEDULER_CONFIG_KEY = "kube-scheduler.yaml"  # present in extender mode (templates/scheduler/extender/)


class ExplainError(UserError):
    """The scheduler's configuration cannot be found or used; the message says where it looked."""


@dataclass(frozen=True)
class SchedulerConfig:
    config: KubeSchedulerConfiguration
    source: str  # "ConfigMap kube-system/x-config", "file ...", "rendered from lab.yaml"
    mode: str = "standalone"  # or "extender": the config is the extender's, beside a kube-scheduler

    def profile(self, scheduler_name: str) -> Profile:
        """The scheduler's profile for that name, scanning every node (explanations look at all of them)."""
        for resolved in self.config.resolved_profiles():
            if resolved.scheduler_name == scheduler_name:
                return Profile(resolved.scheduler_name, resolved.filters, resolved.scores, 100)
        names = ", ".join(p.schedulerName for p in self.config.profiles)
        raise ExplainError(f"{self.source}: no profile for schedulerName {scheduler_name!r} (profiles: {names}); "
                           "set scheduler.name in the lab definition to one of them")

    def network_aware_args(self, scheduler_name: str) -> NetworkAwareArgs | None:
        """The NetworkAware args the scheduler filters with, or None when that filter is not enabled."""
        for plugin, args in self.profile(scheduler_name).filters:
            if plugin.name == "NetworkAware":
                return args  # type: ignore[return-value]
        return None

    def least_loaded_args(self, scheduler_name: str) -> tuple[LeastLoadedArgs, int] | None:
        """LeastLoaded's args and weight in the scheduler's score phase, or None when it does not score."""
        for plugin, args, weight in self.profile(scheduler_name).scores:
            if plugin.name == "LeastLoaded":
                return args, weight  # type: ignore[return-value]
        return None


def configmap_name(lab: Lab) -> str:
    return f"{lab.scheduler.name}-config"


def load_scheduler_config(kube: Kube, lab: Lab, config_file: Path | None = None) -> SchedulerConfig:
    s = lab.scheduler
    configmap = kube.get_or_none(f"/api/v1/namespaces/{s.namespace}/configmaps/{configmap_name(lab)}")
    if configmap is not None:
        source = f"ConfigMap {s.namespace}/{configmap_name(lab)}"
        data = configmap.get("data") or {}
        text = data.get(CONFIG_KEY)
        if text is None:
            raise ExplainError(f"{source}: no {CONFIG_KEY} key; redeploy with `./lab deploy-scheduler`")
        mode = "extender" if KUBE_SCHEDULER_CONFIG_KEY in data else "standalone"  # what is deployed
        return SchedulerConfig(_parse(text, source), source, mode)
    if config_file is not None:
        try:
            return SchedulerConfig(load_config(config_file), f"file {config_file}", s.mode)
        except ConfigError as err:
            raise ExplainError(str(err)) from None
    return SchedulerConfig(_parse(render_config(lab), "rendered from the lab definition"),
                           "rendered from the lab definition", s.mode)


def _parse(text: str, source: str) -> KubeSchedulerConfiguration:
    try:
        return parse_config(yaml.safe_load(text), source)
    except (ConfigError, yaml.YAMLError) as err:
        raise ExplainError(f"{source}: {err}") from None


# ------------------------------------------------------------------------------------------ snapshot


def snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], skip_uid: str = "") -> list[NodeInfo]:
    """NodeInfos with every live bound pod counted, as the scheduler's cache holds them."""
    infos = {n["metadata"]["name"]: NodeInfo.from_api(n) for n in nodes}
    for obj in pods:
        node = (obj.get("spec") or {}).get("nodeName")
        if node in infos and (obj.get("metadata") or {}).get("uid") != skip_uid:
            infos[node].add_pod(PodInfo.from_api(obj, LENIENT))
    return list(infos.values())


# ------------------------------------------------------------------------------------------ explain


@dataclass
class NodeVerdict:
    node: str
    fits: bool
    reasons: list[str] = field(default_factory=list)  # "Plugin: reason", every failing filter
    scores: dict[str, int] = field(default_factory=dict)  # plugin -> weighted score (feasible nodes)
    total: int | None = None
    pods: int = 0  # pods counted on the node

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "fits": self.fits, "reasons": self.reasons, "scores": self.scores,
                "total": self.total, "pods": self.pods}


@dataclass
class Explanation:
    pod: str
    config_source: str
    nodes: list[NodeVerdict]
    message: str  # the scheduler's FailedScheduling message, or its choice
    would_choose: list[str] = field(default_factory=list)  # nodes tied for the best total
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "config_source": self.config_source, "message": self.message,
                "would_choose": self.would_choose, "notes": self.notes,
                "nodes": [n.as_json() for n in self.nodes]}


def explain_pod(pod_obj: dict[str, Any], nodes: list[NodeInfo], profile: Profile, config_source: str) -> Explanation:
    """Every filter verdict and weighted score of `profile` for this pod on each node (pure)."""
    key = f"{pod_obj['metadata'].get('namespace')}/{pod_obj['metadata']['name']}"
    pending = dict(pod_obj, spec={**pod_obj.get("spec", {}), "nodeName": None})
    try:
        pod = PodInfo.from_api(pending)
        verdicts = _verdicts(pod, nodes, profile)
        result: ScheduleResult = profile.schedule(pod, nodes, random.Random(0))
    except PodSpecError as err:  # the scheduler reports these in a FailedScheduling event too
        return Explanation(key, config_source, [], f"the scheduler cannot read this pod: {err}")
    best = max((v.total for v in verdicts if v.total is not None), default=None)
    would = [v.node for v in verdicts if best is not None and v.total == best]
    message = result.message or f"would choose {' or '.join(would) or result.node_name}"
    return Explanation(key, config_source, verdicts, message, would, _network_notes(pod, profile))


def _network_notes(pod: PodInfo, profile: Profile) -> list[str]:
    """A pod annotated for a network value the scheduler does not act on is silently unconstrained: say so."""
    args = next((a for p, a in profile.filters if isinstance(a, NetworkAwareArgs)), None) or next(
        (a for p, a, _weight in profile.scores if isinstance(a, NetworkAwareArgs)), None)
    if args is None:
        return []
    value = pod.annotations.get(args.annotationKey)
    if value is None or value == args.labelValue:
        return []
    note = (f"NetworkAware ignores this pod: its annotation {args.annotationKey}={value} is not the scheduler's "
            f"labelValue {args.labelValue!r}, so any node may take it")
    return [note]


def _verdicts(pod: PodInfo, nodes: list[NodeInfo], profile: Profile) -> list[NodeVerdict]:
    """Unlike a scheduling cycle, every filter runs on every node, so a node shows all its reasons."""
    verdicts = {n.name: NodeVerdict(n.name, True, pods=n.pod_count) for n in nodes}
    cluster = ClusterView(nodes)  # what plugins that read the whole cluster (spread, affinity) see
    for plugin, args in profile.filters:
        state = plugin.prepare_filter(pod, args, cluster)  # once per plugin, as in a scheduling cycle
        statuses = None if state is None else plugin.verdicts(state, nodes)
        if statuses is None:  # every node passes
            continue
        for node, status in zip(nodes, statuses, strict=True):
            if status is not None:
                verdicts[node.name].fits = False
                verdicts[node.name].reasons.extend(f"{plugin.name}: {r}" for r in status.reasons)
    feasible = [n for n in nodes if verdicts[n.name].fits]
    totals = [0] * len(feasible)
    for plugin, args, weight in profile.scores:
        scores = plugin.score_nodes(pod, feasible, args, cluster) if feasible else []
        for i, node in enumerate(feasible):
            verdicts[node.name].scores[plugin.name] = scores[i] * weight
            totals[i] += scores[i] * weight
    for node, total in zip(feasible, totals, strict=True):
        verdicts[node.name].total = total
    return list(verdicts.values())


def explain_in_cluster(kube: Kube, namespace: str, name: str, config: SchedulerConfig, scheduler_name: str) -> Explanation:
    """Explain one pod from the cluster's current state (its own binding, if any, not counted)."""
    pod_obj = kube.get(pod_path(namespace, name))
    uid = pod_obj["metadata"].get("uid", "")
    nodes = snapshot(kube.nodes(), kube.live_pods(), skip_uid=uid)
    return explain_pod(pod_obj, nodes, config.profile(scheduler_name), config.source)
