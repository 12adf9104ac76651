"""Why a pod went (or would go) where it did: for each node, every failing filter's reason and each score
plugin's raw, normalised and weighted score the bundled scheduler computes for that pod, and the node its
own decision code picks (Profile.schedule; ties drawn with a seeded generator). For a pod not bound, the
points around the filters too: its scheduling gates and the PreEnqueue plugins before them, Reserve and Permit
on the chosen node after them, run as a what-if that changes nothing (explain_points.py), with the state the
scheduler most likely keeps the pod in and how that was inferred (or read from its log: explain_log.py). One
path for `./lab explain` (explain_verb.py), the placement page and test-placement's misses (checks.py). For
a pod with DRA claims, the devices behind DynamicResources' verdicts (explain_devices.py).

The cluster is seen as the scheduler's plugins see it: the nodes, live pods and namespaces listed from the
API go through the scheduler's own cache handlers and cache (cluster_view), so pod counts, the pod index
and the namespace labels a namespaceSelector reads are the scheduler's. What the explainer cannot see: pods
the scheduler has assumed but not yet bound (a moment's difference), and, at 100 nodes and more, which
nodes the scheduler's percentageOfNodesToScore sampling would have visited (every node is explained).

The plugins, their args and weights are the scheduler's own (`scheduler.framework.Profile` built from a
KubeSchedulerConfiguration read with the lab's plugins loaded, labkit.lab_plugins: every registered plugin is
explained by the same code, a user's as kube-scheduler's defaults; nothing here knows any plugin), read from
the first of:
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.kube import Kube, KubeError, event_time, pod_path
from labkit.natural import natural_key
from labkit.placement.explain_devices import DeviceReport, device_report
from labkit.placement.explain_misses import ResourceMiss, resource_misses
from labkit.placement.explain_points import (
    GATED,
    WOULD_BIND,
    WOULD_WAIT,
    PluginSetupError,
    PointsOutcome,
    Reader,
    extensions_for,
    has_points,
    pre_enqueue,
    reserve_and_permit,
)
from labkit.scheduler_deploy.manifests import render_config
from scheduler.config import ConfigError, KubeSchedulerConfiguration, load_config, parse_config
from scheduler.framework import ClusterView, ObjectStore, Profile, Registry, Resource, ScheduleResult
from scheduler.model import PodInfo, PodSpecError
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import POD_KIND, TERMINAL_PHASES, CacheHandlers

PODS_KIND = str(Resource.parse(POD_KIND))
SCHEDULING_GATES = "SchedulingGates"  # kube-scheduler's in-tree PreEnqueue plugin for spec.schedulingGates

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
                return Profile(resolved.scheduler_name, resolved.filters, resolved.scores, 100,
                               points=resolved.points)
        names = ", ".join(p.schedulerName for p in self.config.profiles)
        raise ExplainError(f"{self.source}: no profile for schedulerName {scheduler_name!r} (profiles: {names}); "
                           "set scheduler.name in the lab definition to one of them")

    def plugins(self, scheduler_name: str) -> dict[str, dict[str, Any]]:
        """Every plugin the profile runs, by name: its args as the scheduler parsed them (defaults filled in)
        and, for a score plugin, its weight."""
        for resolved in self.config.resolved_profiles():
            if resolved.scheduler_name != scheduler_name:
                continue
            found: dict[str, dict[str, Any]] = {}
            points = [*((p, a, None) for p, a in resolved.filters), *resolved.scores,
                      *([(*resolved.post_filter, None)] if resolved.post_filter else [])]
            for plugin, args, weight in points:
                entry = found.setdefault(plugin.name, {"args": args.model_dump(mode="json")})
                if weight is not None:
                    entry["weight"] = weight
            return found
        self.profile(scheduler_name)  # raises, naming the profiles there are
        return {}

    def missing_plugins(self, scheduler_name: str, required: dict[str, dict[str, Any]]) -> str | None:
        """Why the profile does not run `required` (plugin name -> args it must have), or None when it does."""
        running = self.plugins(scheduler_name)
        for name, want in required.items():
            if name not in running:
                return f"the scheduler's profile {scheduler_name} does not enable {name}"
            have = running[name]["args"]
            differ = [f"{k} {have.get(k)!r} (scenario: {v!r})" for k, v in want.items() if have.get(k) != v]
            if differ:
                return f"the scheduler runs {name} with {', '.join(differ)}"
        return None


def configmap_name(lab: Lab) -> str:
    return f"{lab.scheduler.name}-config"


def load_scheduler_config(kube: Kube, lab: Lab, config_file: Path | None = None,
                          plugins: Registry | None = None) -> SchedulerConfig:
    """The scheduler's configuration, read with `plugins` (the lab's loaded: lab_plugins.registry)."""
    s = lab.scheduler
    configmap = kube.get_or_none(f"/api/v1/namespaces/{s.namespace}/configmaps/{configmap_name(lab)}")
    if configmap is not None:
        source = f"ConfigMap {s.namespace}/{configmap_name(lab)}"
        data = configmap.get("data") or {}
        text = data.get(CONFIG_KEY)
        if text is None:
            raise ExplainError(f"{source}: no {CONFIG_KEY} key; redeploy with `./lab deploy-scheduler`")
        mode = "extender" if KUBE_SCHEDULER_CONFIG_KEY in data else "standalone"  # what is deployed
        return SchedulerConfig(_parse(text, source, plugins), source, mode)
    if config_file is not None:
        try:
            return SchedulerConfig(load_config(config_file, plugins), f"file {config_file}", s.mode)
        except ConfigError as err:
            raise ExplainError(str(err)) from None
    return rendered_config(lab, plugins)


def rendered_config(lab: Lab, plugins: Registry | None = None) -> SchedulerConfig:
    """The configuration deploy-scheduler would deploy for this lab definition."""
    source = "rendered from the lab definition"
    return SchedulerConfig(_parse(render_config(lab), source, plugins), source, lab.scheduler.mode)


def _parse(text: str, source: str, plugins: Registry | None) -> KubeSchedulerConfiguration:
    try:
        return parse_config(yaml.safe_load(text), source, plugins)
    except (ConfigError, yaml.YAMLError) as err:
        raise ExplainError(f"{source}: {err}") from None


# ------------------------------------------------------------------------------------------ snapshot


@dataclass(frozen=True)
class StorageObjects:
    """The claims, PersistentVolumes and StorageClasses a pod's volumes are judged by, as listed."""
    claims: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    classes: list[dict[str, Any]] = field(default_factory=list)


def cluster_view(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], namespaces: list[dict[str, Any]],
                 skip_uid: str = "", storage: StorageObjects | None = None, watches: Iterable[str] = (),
                 objects: Mapping[str, Iterable[dict[str, Any]]] | None = None) -> ClusterView:
    """The cluster as the scheduler's plugins see it: the API objects go through the scheduler's own cache
    handlers into its cache (every node, every non-terminal bound pod, each namespace's labels for a
    namespaceSelector, the claims, PVs and StorageClasses the volume plugins read), and the view is built
    from its snapshot as a scheduling cycle builds it, with a store per kind the plugins ``watch`` holding
    ``objects`` of that kind ("v1/pods": the non-terminal ``pods``, pending ones included, as the
    scheduler's pod informer serves it).
    The pod ``skip_uid`` is left out (a bound pod is explained as if it were not on its node yet)."""
    cache = Cache()
    handlers = CacheHandlers(cache)
    for node in nodes:
        handlers.node_changed(node)
    for pod in pods:
        if not skip_uid or (pod.get("metadata") or {}).get("uid") != skip_uid:
            handlers.pod_changed(pod)
    for namespace in namespaces:
        handlers.namespace_changed(namespace)
    storage = storage or StorageObjects()
    for claim in storage.claims:
        handlers.claim_changed(claim)
    for volume in storage.volumes:
        handlers.volume_changed(volume)
    for storage_class in storage.classes:
        handlers.storage_class_changed(storage_class)
    snap = cache.snapshot()
    kinds = {}
    for kind in sorted({str(Resource.parse(k)) for k in watches} | {str(Resource.parse(k)) for k in objects or {}}):
        store = kinds[kind] = ObjectStore(kind)
        given = (objects or {}).get(kind)
        if given is None:
            given = [p for p in pods if (p.get("status") or {}).get("phase") not in TERMINAL_PHASES] \
                if kind == PODS_KIND else []
        for obj in given:
            store.put(obj)
    return ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, cache.volumes, snap.traits, kinds=kinds)


def read_cluster(kube: Kube, skip_uid: str = "", watches: Iterable[str] = (),
                 notes: list[str] | None = None) -> ClusterView:
    """The cluster's current nodes, pods, namespaces and storage objects, read from the paths the
    scheduler's informers list (list items carry no kind, so each list goes to its own handler), and the
    objects of each kind in ``watches`` (one the API server does not serve is left empty, said in ``notes``)."""
    storage = StorageObjects(kube.items("/api/v1/persistentvolumeclaims"), kube.items("/api/v1/persistentvolumes"),
                             kube.items("/apis/storage.k8s.io/v1/storageclasses"))
    objects: dict[str, list[dict[str, Any]]] = {}
    for kind in sorted(watches):
        if str(Resource.parse(kind)) == PODS_KIND:
            continue  # the pods listed below
        try:
            objects[kind] = kube.items(Resource.parse(kind).path)
        except KubeError as err:
            objects[kind] = []
            if notes is not None:
                notes.append(f"{kind}, which a plugin watches, cannot be listed ({err}): explained as if none "
                             "existed, as the scheduler's informer for it would see it")
    return cluster_view(kube.nodes(), kube.live_pods(), kube.items("/api/v1/namespaces"), skip_uid, storage,
                        watches, objects)


# ------------------------------------------------------------------------------------------ explain


@dataclass
class NodeVerdict:
    node: str
    fits: bool
    reasons: list[str] = field(default_factory=list)  # "Plugin: reason", every failing filter
    scores: dict[str, int] = field(default_factory=dict)  # plugin -> weighted score (feasible nodes)
    raw_scores: dict[str, int] = field(default_factory=dict)  # plugin -> score before normalising
    normalized_scores: dict[str, int] = field(default_factory=dict)  # plugin -> 0..100, before the weight
    total: int | None = None
    pods: int = 0  # pods counted on the node

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "fits": self.fits, "reasons": self.reasons, "scores": self.scores,
                "raw_scores": self.raw_scores, "normalized_scores": self.normalized_scores,
                "total": self.total, "pods": self.pods}


@dataclass
class Explanation:
    pod: str
    config_source: str
    nodes: list[NodeVerdict]  # the chosen node first, then the other feasible ones by total, then the misses
    message: str  # the scheduler's FailedScheduling message, or its choice
    would_choose: list[str] = field(default_factory=list)  # nodes tied for the best total
    notes: list[str] = field(default_factory=list)
    chosen: str | None = None  # the node the scheduler's own decision picks (ties: the seeded draw)
    bound_to: str | None = None  # where the pod is bound now, if it is
    weights: dict[str, int] = field(default_factory=dict)  # score plugin -> weight, in the profile's order
    scheduler: str = ""  # the profile's schedulerName
    # bound (now), gated, would_wait, rejected, would_bind, unschedulable; "" for a pod the scheduler cannot read
    outcome: str = ""
    points: PointsOutcome | None = None  # PreEnqueue, Reserve and Permit's verdicts (a pending pod)
    likely_state: str | None = None  # what the scheduler is most likely doing with the pod now, when inferred
    inferred: str | None = None  # how likely_state was inferred
    read_from: str | None = None  # where likely_state was read instead (the scheduler's log line)
    misses: list[ResourceMiss] = field(default_factory=list)  # no node fits: each resource found short
    devices: DeviceReport | None = None  # a pod with DRA claims: its claims' devices, each node's (ours)

    def as_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "scheduler": self.scheduler, "config_source": self.config_source,
                "message": self.message,
                "chosen": self.chosen, "would_choose": self.would_choose, "bound_to": self.bound_to,
                "notes": self.notes, "weights": self.weights, "nodes": [n.as_json() for n in self.nodes],
                "outcome": self.outcome, "points": None if self.points is None else self.points.as_json(),
                "likely_state": self.likely_state, "inferred": self.inferred, "read_from": self.read_from,
                "misses": [m.as_json() for m in self.misses],
                "devices": None if self.devices is None else self.devices.as_json()}


def explain_pod(pod_obj: dict[str, Any], cluster: ClusterView, profile: Profile, config_source: str,
                seed: int = 0, reader: Reader | None = None) -> Explanation:
    """Every filter verdict and score of `profile` for this pod on each node of `cluster` and, for a pending
    pod, what the profile's PreEnqueue, Reserve and Permit plugins decide (a what-if: explain_points); a pod
    the scheduler cannot read is explained by the error it would report."""
    try:
        return explain_readable_pod(pod_obj, cluster, profile, config_source, seed, reader)
    except PodSpecError as err:  # the scheduler reports these in a FailedScheduling event too
        return Explanation(_key(pod_obj), config_source, [], f"the scheduler cannot read this pod: {err}",
                           bound_to=_bound_to(pod_obj), scheduler=profile.scheduler_name)


def explain_readable_pod(pod_obj: dict[str, Any], cluster: ClusterView, profile: Profile, config_source: str,
                         seed: int = 0, reader: Reader | None = None) -> Explanation:
    """explain_pod, raising model.PodSpecError (naming the field) for a pod the scheduler cannot read.
    ``reader``: GETs a path from the API server, for a plugin that reads through its handle's API."""
    bound_to = _bound_to(pod_obj)
    pending_obj = dict(pod_obj, spec={**(pod_obj.get("spec") or {}), "nodeName": None})
    pod = PodInfo.from_api(pending_obj)
    pods_store = cluster.kinds.get(PODS_KIND)
    if pods_store is not None and not bound_to:  # a what-if manifest counts as created, as it would be
        pods_store.put(pending_obj)
    verdicts = _verdicts(pod, cluster, profile)
    # The decision itself is the scheduler's code on the same view; only its tie-break draw is seeded.
    result: ScheduleResult = profile.schedule(pod, cluster.nodes, random.Random(seed), cluster)
    best = max((v.total for v in verdicts if v.total is not None), default=None)
    would = [v.node for v in verdicts if best is not None and v.total == best]
    message = result.message or _choice(result.node_name, would, bound_to)
    notes = _scheduler_name_notes(pod, profile)
    explanation = Explanation(_key(pod_obj), config_source, _ranked(verdicts, result.node_name), message, would,
                              notes, result.node_name, bound_to,
                              {plugin.name: weight for plugin, _args, weight in profile.scores},
                              profile.scheduler_name)
    if not any(v.fits for v in verdicts):
        explanation.misses = resource_misses(pod, list(cluster.nodes), {v.node: v.reasons for v in verdicts})
    by_name = {n.name: n for n in cluster.nodes}
    explanation.devices = device_report(pod, cluster, [by_name[v.node] for v in explanation.nodes])
    if bound_to:
        explanation.outcome = "bound"
        return explanation
    explanation.outcome = WOULD_BIND if result.node_name else "unschedulable"
    try:
        points = run_points(pod_obj, pod, cluster, profile, result.node_name, reader)
    except PluginSetupError as err:
        notes.append(f"PreEnqueue, Reserve and Permit not run: {err}")
        return explanation
    if points is not None:
        _tell_points(explanation, points)
    return explanation


def run_points(pod_obj: dict[str, Any], pod: PodInfo, cluster: ClusterView, profile: Profile, chosen: str | None,
               reader: Reader | None = None) -> PointsOutcome | None:
    """For a pending pod: its scheduling gates, the PreEnqueue plugins, then (when the filters chose a node)
    Reserve and Permit there, as a what-if (explain_points). None: no point ran (no node fits). Raises
    PluginSetupError when a plugin's setup class cannot be made."""
    gated = scheduling_gates(pod_obj)
    if gated is not None:
        return gated
    extensions = extensions_for(profile, cluster, reader)
    points = pre_enqueue(extensions, pod)
    if points is None and chosen is not None:
        points = reserve_and_permit(extensions, pod, chosen, cluster)
    return points


HELD_LIMIT = 200  # pending pods checked per call of held_pods (each is one scheduling decision)


def held_pods(kube: Kube, config: SchedulerConfig, scheduler_name: str, seed: int = 0) -> dict[str, Any]:
    """The scheduler's pending pods that its scheduling gates, PreEnqueue, Reserve or Permit plugins hold, as
    `explain` tells them, for the placement page: {"pods": {"ns/name": {"outcome", "point", "plugin", "reason",
    "node"}}, "checked": n, "unchecked": m} (pods beyond HELD_LIMIT are not checked). Only outcomes gated,
    would_wait and rejected are listed; the Permit ones are a what-if, as in `explain`."""
    profile = config.profile(scheduler_name)
    pending = [p for p in kube.live_pods() if not _bound_to(p)
               and ((p.get("spec") or {}).get("schedulerName") or "default-scheduler") == scheduler_name]
    checked, held = pending[:HELD_LIMIT], {}
    # Without PreEnqueue, Reserve or Permit plugins only the pods' own scheduling gates can hold them.
    cluster = read_cluster(kube, watches=profile.watches) if checked and has_points(profile) else None
    for pod_obj in checked:
        try:
            pod = PodInfo.from_api(pod_obj)
            points = scheduling_gates(pod_obj)
            if points is None and cluster is not None:
                result = profile.schedule(pod, cluster.nodes, random.Random(seed), cluster)
                points = run_points(pod_obj, pod, cluster, profile, result.node_name, kube.get)
        except (PodSpecError, PluginSetupError):
            continue  # explain says why, for the pod selected
        if points is not None and points.outcome != WOULD_BIND:
            held[_key(pod_obj)] = {"outcome": points.outcome, "point": points.point, "plugin": points.plugin,
                                   "reason": points.reason, "node": points.node}
    return {"pods": held, "checked": len(checked), "unchecked": len(pending) - len(checked)}


def scheduling_gates(pod_obj: dict[str, Any]) -> PointsOutcome | None:
    """kube-scheduler's SchedulingGates PreEnqueue plugin, which runs before any other: a pod whose
    spec.schedulingGates is not empty is not tried (the scheduler's pending pods hold it back the same way)."""
    gates = [g.get("name", "") for g in (pod_obj.get("spec") or {}).get("schedulingGates") or []]
    if not gates:
        return None
    return PointsOutcome(GATED, "PreEnqueue", SCHEDULING_GATES, f"waiting for scheduling gates: [{' '.join(gates)}]")


def _tell_points(explanation: Explanation, points: PointsOutcome) -> None:
    """The points' verdict as the explanation's outcome, message and notes."""
    explanation.points, explanation.outcome = points, points.outcome
    if points.outcome == GATED:
        were_in = explanation.message
        explanation.message = (f"gated at PreEnqueue by {points.plugin}: {points.reason}; the scheduler does not "
                               f"try it until that changes (were it let in: {were_in})")
    elif points.outcome == WOULD_WAIT:
        waits = "; ".join(f"{w.plugin} (up to {w.timeout:g}s){': ' + w.reason if w.reason else ''}"
                          for w in points.waits)
        explanation.message = (f"{explanation.message}; reserved there, it would wait at Permit for {waits}; it "
                               "is bound once every waiting plugin allows it, and not bound if one rejects it or "
                               "its time runs out")
    elif points.outcome != WOULD_BIND:
        explanation.message = (f"{explanation.message}; there it would be rejected at {points.point} by "
                               f"{points.plugin}: {points.reason}")
    if points.refused_calls:
        explanation.notes.append("API calls the plugins made, refused here (explain changes nothing): "
                                 + ", ".join(points.refused_calls))


def infer_state(explanation: Explanation, last_failure: str | None = None) -> None:
    """For a pod in the cluster, not bound: what the scheduler is most likely doing with it, and how that
    was inferred (its queue and the pods it holds at Permit live in its memory, out of reach from here).
    ``last_failure``: the pod's newest FailedScheduling event, "<time>: <message>"."""
    points = explanation.points
    if explanation.bound_to or points is None:
        return
    if explanation.notes and any(n.startswith("the pod names schedulerName") for n in explanation.notes):
        return  # another scheduler's pod
    seen = f"; its newest FailedScheduling event: {last_failure}" if last_failure else ""
    if points.plugin == SCHEDULING_GATES:
        gates = points.reason.partition("[")[2].rstrip("]").replace(" ", ", ")
        explanation.likely_state = f"gated by its spec.schedulingGates ({gates}), read from the pod"
    elif points.outcome == GATED:
        explanation.likely_state = f"gated at PreEnqueue by {points.plugin}, out of the scheduler's active queue"
        explanation.inferred = ("inferred, not read: the scheduler's own PreEnqueue plugins, run here on the objects "
                                "listed from the API server now, keep the pod out of its queue; the queue itself "
                                "lives in the scheduler's memory" + seen)
    elif points.outcome == WOULD_WAIT:
        plugins = ", ".join(w.plugin for w in points.waits)
        explanation.likely_state = f"reserved on {points.node}, waiting at Permit for {plugins}"
        explanation.inferred = ("inferred, not read: the pod is not bound, and the scheduler's own Reserve and Permit "
                                f"plugins, run here on the cluster as it is now, hold it on {points.node}; the pods "
                                "the scheduler holds at Permit live in its memory, and pods it holds are not "
                                "counted on their nodes here. If its wait already ended (a timeout or a "
                                "rejection), it is back in the queue until the next try" + seen)


def _key(pod_obj: dict[str, Any]) -> str:
    meta = pod_obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _bound_to(pod_obj: dict[str, Any]) -> str | None:
    return (pod_obj.get("spec") or {}).get("nodeName") or None


def _choice(chosen: str | None, tied: list[str], bound_to: str | None) -> str:
    message = f"would choose {chosen}"
    others = [n for n in tied if n != chosen]
    if others:
        message += (f" (tied with {', '.join(others)}; which of them the scheduler takes depends on where its "
                    "search starts)")
    if bound_to == chosen or (bound_to and bound_to in tied):
        message += f"; bound to {bound_to}, a node it would choose now"
    elif bound_to:
        message += f"; bound to {bound_to}, not the node it would choose now"
    return message


def _ranked(verdicts: list[NodeVerdict], chosen: str | None) -> list[NodeVerdict]:
    """The chosen node, the other feasible nodes best first, then the misses with the fewest reasons first."""
    return sorted(verdicts, key=lambda v: (v.node != chosen, not v.fits, -(v.total or 0), len(v.reasons),
                                           natural_key(v.node)))


def _scheduler_name_notes(pod: PodInfo, profile: Profile) -> list[str]:
    if pod.scheduler_name == profile.scheduler_name:
        return []
    note = (f"the pod names schedulerName {pod.scheduler_name}, not {profile.scheduler_name}: this scheduler "
            f"never places it; shown is what {profile.scheduler_name} would do with it")
    return [note]


def _verdicts(pod: PodInfo, cluster: ClusterView, profile: Profile) -> list[NodeVerdict]:
    """Unlike a scheduling cycle, every filter runs on every node, so a node shows all its reasons; the
    feasible nodes are scored as Profile.score_nodes scores them, each step kept."""
    nodes = list(cluster.nodes)
    verdicts = {n.name: NodeVerdict(n.name, True, pods=n.pod_count) for n in nodes}
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
    for plugin, args, weight in profile.scores if feasible else ():
        state = plugin.prepare_score(pod, args, cluster, feasible)
        raw = [0] * len(feasible) if state is None else plugin.raw_scores(state, feasible)
        normalized = list(raw)
        if state is not None and plugin.normalize is not None:
            plugin.normalize(normalized, args)
        for node, r, n in zip(feasible, raw, normalized, strict=True):
            verdict = verdicts[node.name]
            verdict.raw_scores[plugin.name], verdict.normalized_scores[plugin.name] = r, n
            verdict.scores[plugin.name] = n * weight
    for node in feasible:
        verdicts[node.name].total = sum(verdicts[node.name].scores.values())
    return list(verdicts.values())


def explain_in_cluster(kube: Kube, namespace: str, name: str, config: SchedulerConfig, scheduler_name: str,
                       seed: int = 0) -> Explanation:
    """Explain one pod from the cluster's current state (its own binding, if any, not counted)."""
    pod_obj = kube.get_or_none(pod_path(namespace, name))
    if pod_obj is None:
        raise ExplainError(f"pod {name} not found in namespace {namespace}; list them with "
                           f"`kubectl get pods -n {namespace}` (or give --namespace)")
    profile = config.profile(scheduler_name)
    notes: list[str] = []
    cluster = read_cluster(kube, skip_uid=pod_obj["metadata"].get("uid", ""), watches=profile.watches, notes=notes)
    explanation = explain_pod(pod_obj, cluster, profile, config.source, seed, kube.get)
    explanation.notes.extend(notes)
    if not explanation.bound_to:
        infer_state(explanation, last_failure(kube, pod_obj))
    return explanation


def last_failure(kube: Kube, pod_obj: dict[str, Any]) -> str | None:
    """The pod's newest FailedScheduling event as "<time>: <message>", or None."""
    meta = pod_obj.get("metadata") or {}
    events = [e for e in kube.pod_events(meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", ""))
              if e.get("reason") == "FailedScheduling"]
    if not events:
        return None
    newest = events[-1]
    return f"{event_time(newest)}: {newest.get('message') or newest.get('note') or ''}"
