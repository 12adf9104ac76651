"""What a simulation runs on, built from the verb's inputs: the cluster (a file of Nodes and Pods, node pools,
or a live cluster read once), the workload's pods with their arrival times and run durations, and the
profiles to compare (the lab's, or the default one, and each of --profile FILE's), each with the plugin
registry it is checked against (the in-tree plugins, the lab's scheduler.plugins and --plugins SOURCE)."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.lab import Lab
from labkit import lab_plugins
from labkit.simulate.schema import (
    ClusterFile,
    SimulateInputError,
    WorkloadFile,
    load_cluster_file,
    load_workload_file,
)
from scheduler.config import API_VERSION, ConfigError, KubeSchedulerConfiguration, parse_config
from scheduler.framework import PluginError, Registry, load_registry
from scheduler.model import PodInfo, PodSpecError
from scheduler.testing import Cluster, cluster_from_objects, cluster_from_yaml, node_object

ZONE_LABEL = "topology.kubernetes.io/zone"
GROUP_LABEL = "simulate.kubelab.dev/item"  # each workload pod names its item
GANG_LABEL = "scheduling.x-k8s.io/pod-group"  # examples/coscheduling reads a pod's group from it
PODGROUPS = "scheduling.x-k8s.io/v1alpha1/podgroups"
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # simulated second 0, for creationTimestamps


@dataclass(frozen=True)
class Arrival:
    """One workload pod: its object (schedulerName set per profile when it runs), when it is created and how
    long it runs once bound (None: to the end)."""

    at: float
    pod: dict[str, Any]
    duration: float | None
    item: str

    @property
    def key(self) -> str:
        meta = self.pod["metadata"]
        return f"{meta['namespace']}/{meta['name']}"


@dataclass
class Workload:
    arrivals: list[Arrival]  # by arrival time
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # PodGroups by kind


@dataclass(frozen=True)
class SimProfile:
    """One column of the comparison: a configuration with one profile, and the registry it was checked
    against."""

    label: str
    scheduler_name: str
    config: KubeSchedulerConfiguration
    registry: Registry


# ------------------------------------------------------------------------------------------ the cluster


def pool_nodes(pools: ClusterFile) -> list[dict[str, Any]]:
    """Node objects for each pool: <pool>-<i>, zones round-robin."""
    nodes = []
    for pool in pools.pools:
        for i in range(pool.count):
            labels = dict(pool.labels)
            if pool.zones:
                labels[ZONE_LABEL] = pool.zones[i % len(pool.zones)]
            capacity = {k: str(v) for k, v in pool.capacity.items()}
            obj = node_object(name=f"{pool.name}-{i}", labels=labels, annotations=pool.annotations or None,
                              taints=[t.model_dump() for t in pool.taints] or None)
            obj["status"]["allocatable"] = dict(capacity)
            obj["status"]["capacity"] = dict(capacity)
            nodes.append(obj)
    return nodes


def cluster_from_file(path: Path) -> Cluster:
    """Node pools, or Node/Pod/Namespace documents (``cluster_from_yaml``)."""
    pools = load_cluster_file(path)
    try:
        if pools is None:
            return cluster_from_yaml(path)
        return cluster_from_objects(pool_nodes(pools), str(path))
    except (ValueError, KeyError) as err:
        raise SimulateInputError(f"{path}: {err}") from None


def cluster_from_live(kube: Any) -> Cluster:
    """The cluster behind ``kube`` (labkit.kube.Kube), listed once, read-only: nodes, the pods that hold a
    place, namespaces."""
    from labkit.kube import KubeError

    try:
        nodes, pods, namespaces = kube.nodes(), kube.live_pods(), kube.items("/api/v1/namespaces")
    except KubeError as err:
        raise SimulateInputError(f"--from-cluster: cannot read the cluster: {err}. Is it up (`./lab status`)? "
                                 "Or simulate on a file: --cluster FILE") from None
    objects = [dict(o, kind="Node") for o in nodes] + [dict(o, kind="Namespace") for o in namespaces]
    known = {o["metadata"]["name"] for o in nodes}
    objects += [dict(o, kind="Pod") for o in pods if (o.get("spec") or {}).get("nodeName") in known]
    return cluster_from_objects(objects, f"the cluster at {kube.where}")


# ------------------------------------------------------------------------------------------ the workload


def _timestamp(seconds: float) -> str:
    return (EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def workload_from_file(path: Path, pending: list[Any] = ()) -> Workload:
    """The workload file's pods in arrival order, plus the cluster file's pending pods arriving at 0."""
    spec: WorkloadFile = load_workload_file(path)
    arrivals: list[Arrival] = []
    objects: dict[str, list[dict[str, Any]]] = {}
    for index, item in enumerate(spec.items):
        for i in range(item.replicas):
            at = item.at + (i / item.rate if item.rate else 0.0)
            pod = copy.deepcopy(item.template)
            meta = pod.setdefault("metadata", {})
            meta.update(name=f"{item.name}-{i}", namespace=item.namespace, creationTimestamp=_timestamp(at))
            meta["uid"] = f"sim-{item.namespace}-{item.name}-{i}"
            meta["labels"] = {**(meta.get("labels") or {}), **item.labels, GROUP_LABEL: item.name}
            if item.gang is not None:
                meta["labels"][GANG_LABEL] = item.name
            body = pod.setdefault("spec", {})
            containers = body.setdefault("containers", [{"name": "main", "image": "registry.k8s.io/pause:3.10"}])
            if item.requests:
                containers[0].setdefault("resources", {})["requests"] = {k: str(v) for k, v in item.requests.items()}
            if item.priority is not None:
                body["priority"] = item.priority
            pod.update(apiVersion="v1", kind="Pod")
            if i == 0:
                _check_pod(path, index, item.name, pod)
            arrivals.append(Arrival(at, pod, item.duration, item.name))
        if item.gang is not None:
            objects.setdefault(PODGROUPS, []).append({
                "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": item.name, "namespace": item.namespace, "creationTimestamp": _timestamp(item.at),
                             "uid": f"sim-podgroup-{item.namespace}-{item.name}"},
                "spec": {"minMember": item.gang.minMember or item.replicas,
                         "scheduleTimeoutSeconds": item.gang.scheduleTimeoutSeconds}})
    for pod in pending:
        arrivals.append(Arrival(0.0, copy.deepcopy(dict(pod._raw)), None, "(cluster file)"))
    arrivals.sort(key=lambda a: a.at)
    return Workload(arrivals, objects)


def _check_pod(path: Path, index: int, name: str, pod: dict[str, Any]) -> None:
    """The item's pods read as the scheduler reads a pod to place (an item's pods differ only by name)."""
    try:
        PodInfo.from_api(pod)
    except PodSpecError as err:
        field = err.field.removeprefix("spec.containers[0].resources.requests.")
        where = "requests." + field if field != err.field else f"template: {err.field}"
        raise SimulateInputError(f"{path}: not a valid workload file:\n  - items[{index}] ({name}): {where}: "
                                 f"{err.reason}") from None


# ------------------------------------------------------------------------------------------ the profiles


def base_registry(lab: Lab | None, sources: list[str]) -> Registry:
    """The in-tree plugins, the installed entry points, the lab's scheduler.plugins, then each --plugins."""
    registry = lab_plugins.registry(lab) if lab is not None else load_registry(entry_points=True)
    for source in sources:
        try:
            registry = load_registry([source], base=registry, entry_points=False)
        except PluginError as err:
            raise SimulateInputError(f"--plugins {source}: {err}") from None
    return registry


def _one_profile(doc: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "profiles": [profile]}


def lab_profile(lab: Lab | None, registry: Registry) -> SimProfile:
    """The lab's scheduler.profile under its scheduler.name, or without a lab definition kube-scheduler's
    default profile (default-scheduler)."""
    if lab is None:
        doc = {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration",
               "profiles": [{"schedulerName": "default-scheduler"}]}
        return SimProfile("default", "default-scheduler", parse_config(doc, "default profile", registry), registry)
    config = lab_plugins.validate_profile(lab, registry)
    return SimProfile(f"lab ({lab.scheduler.name})", lab.scheduler.name, config, registry)


def file_profiles(path: Path, registry: Registry) -> list[SimProfile]:
    """Each profile of a KubeSchedulerConfiguration file, a column of its own, labelled by the file's name
    (one profile) or by each profile's schedulerName."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SimulateInputError(f"--profile {path}: cannot be read: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise SimulateInputError(f"--profile {path}: not YAML: {err}") from None
    if not isinstance(doc, dict):
        raise SimulateInputError(f"--profile {path}: not a KubeSchedulerConfiguration (a mapping with profiles:)")
    try:
        parse_config(doc, str(path), registry)
    except ConfigError as err:
        raise SimulateInputError(f"--profile {err}") from None
    profiles = doc.get("profiles") or [{"schedulerName": "default-scheduler"}]
    found = []
    for profile in profiles:
        name = profile.get("schedulerName") or "default-scheduler"
        label = path.stem if len(profiles) == 1 else name
        found.append(SimProfile(label, name, parse_config(_one_profile(doc, profile), str(path), registry),
                                registry))
    return found


def unique_labels(profiles: list[SimProfile]) -> list[SimProfile]:
    """Columns need distinct labels: a repeated one gets #2, #3."""
    seen: dict[str, int] = {}
    out = []
    for p in profiles:
        seen[p.label] = seen.get(p.label, 0) + 1
        out.append(p if seen[p.label] == 1 else SimProfile(f"{p.label}#{seen[p.label]}", p.scheduler_name,
                                                           p.config, p.registry))
    return out
