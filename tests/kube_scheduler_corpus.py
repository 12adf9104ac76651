"""Replaying the recorded decisions of a real kube-scheduler v1.36.2 (../shared/reference/kube-scheduler-v1.36.2/,
whose README says how they were recorded and what they cover) through this scheduler's own code.

Each file is one cluster state and the probe pods kube-scheduler judged on it. ``load_state`` builds the
scheduler's view of the state as the informers would (every object through ``CacheHandlers``, the path watch
events take) and its profiles from the file's KubeSchedulerConfiguration; ``judge`` decides one probe's
``pod`` with ``Profile.schedule`` and, for a pod no node fits, builds the FailedScheduling message as the
scheduling cycle does (DynamicResources' PostFilter text, then DefaultPreemption's when the profile enables
it); ``compare`` lists where that verdict differs from kube-scheduler's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.config import parse_config
from scheduler.framework import ClusterView, Profile, build_profiles
from scheduler.framework.post_filter import run_post_filters
from scheduler.framework.preemption import PodDisruptionBudget
from scheduler.model import PodInfo, PodSpecError
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from tests.reference import REFERENCE_DIR
from tests.unavailable import skip_or_fail

CORPUS_DIR = REFERENCE_DIR / "kube-scheduler-v1.36.2"
SETS = ("cases", "messages")


def corpus_files(set_name: str) -> list[Path]:
    """The files of one set, for parametrising (empty without the folder: ``corpus_folder`` says why)."""
    folder = CORPUS_DIR / set_name
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def corpus_folder(set_name: str) -> Path:
    folder = CORPUS_DIR / set_name
    if not folder.is_dir():
        skip_or_fail(f"the recorded kube-scheduler v1.36.2 decisions are not in {folder} (see the project's README)")
    return folder


def read(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    if doc.get("format") != 1:
        raise ValueError(f"{path}: format {doc.get('format')!r}; this replay reads format 1 (its README)")
    return doc


@dataclass
class State:
    """One file's cluster as the scheduler sees it, and its profiles."""

    cache: Cache
    profiles: dict[str, Profile]
    budgets: list[PodDisruptionBudget]


def load_state(doc: dict[str, Any]) -> State:
    objects = doc["objects"]
    cache = Cache()
    handlers = CacheHandlers(cache)
    for namespace in objects["namespaces"]:
        handlers.namespace_changed(namespace)
    for node in objects["nodes"]:
        handlers.node_changed(node)
    for pod in objects["pods"]:  # a terminal pod is dropped by the handler, as the informer never lists one
        handlers.pod_changed(pod)
    for claim in objects["persistentvolumeclaims"]:
        handlers.claim_changed(claim)
    for volume in objects["persistentvolumes"]:
        handlers.volume_changed(volume)
    for storage_class in objects["storageclasses"]:
        handlers.storage_class_changed(storage_class)
    config = dict(doc["config"]["kubeSchedulerConfiguration"])
    # kube-scheduler gives a configuration without profiles one named default-scheduler; this scheduler asks
    # for its profiles by name (as a second scheduler it must not take default-scheduler's pods unasked).
    config.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    profiles = build_profiles(parse_config(config, "config.kubeSchedulerConfiguration"))
    budgets = [PodDisruptionBudget.from_api(b) for b in objects["poddisruptionbudgets"]]
    return State(cache, profiles, budgets)


@dataclass
class Verdict:
    feasible: list[str]
    scores: dict[str, dict[str, int]]  # plugin -> node -> weighted score (two feasible nodes or more)
    best: list[str]  # the nodes tied for the highest total
    message: str | None
    rejected_by: dict[str, str] = field(default_factory=dict)  # node -> plugin that rejected it


def judge(state: State, pod_obj: dict[str, Any]) -> Verdict:
    """Decide ``pod_obj`` on the state as the scheduling cycle does (a fresh profile per probe: probes never
    see each other)."""
    profiles = state.profiles
    name = (pod_obj.get("spec") or {}).get("schedulerName") or "default-scheduler"
    profile = profiles[name]
    profile = Profile(profile.scheduler_name, profile.filters, profile.scores,
                      profile.percentage_of_nodes_to_score, profile.post_filter)
    try:
        pod = PodInfo.from_api(pod_obj)
    except PodSpecError as err:
        return Verdict([], {}, [], f"invalid pod spec: {err.field}: {err.reason}")
    snap = state.cache.snapshot()
    cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, state.cache.volumes, snap.traits)
    rng = random.Random(0)
    result = profile.schedule(pod, snap.nodes, rng, cluster, {})
    if result.node_name is None:
        post = run_post_filters(profile, pod, result, snap.nodes, cluster, state.budgets, {}, rng)
        return Verdict([], {}, [], post.message, {n: s.plugin for n, s in result.failures.items()})
    feasible = sorted(result.feasible_nodes)
    if len(result.feasible_nodes) == 1:
        return Verdict(feasible, {}, feasible, None)
    scores = {plugin: dict(zip(result.feasible_nodes, values, strict=True)) for plugin, values in result.scores.items()}
    top = max(result.totals)
    best = sorted(n for n, total in zip(result.feasible_nodes, result.totals, strict=True) if total == top)
    return Verdict(feasible, scores, best, None)


@dataclass(frozen=True)
class Mismatch:
    """One way our verdict on a probe differs from kube-scheduler's."""

    probe: int
    feature: str
    kind: str  # feasible | score | choice | message
    plugin: str = ""  # a score's plugin; for a choice, the plugins whose scores differed on this probe
    detail: str = ""

    def __str__(self) -> str:
        what = f"{self.kind} {self.plugin}".strip()
        return f"probe {self.probe} ({self.feature}): {what}: {self.detail}"


def expected(doc: dict[str, Any], probe: dict[str, Any]) -> dict[str, Any]:
    """kube-scheduler's verdict in one form for both sets (``messages/`` records only the message)."""
    if doc["set"] == "cases":
        return probe["kube_scheduler"]
    return {"feasible": [], "scores": {}, "bound_to": None, "message": probe["message"]}


def compare(doc: dict[str, Any], probe: dict[str, Any], ours: Verdict) -> Iterator[Mismatch]:
    theirs = expected(doc, probe)
    index, feature = probe["index"], probe["feature"]
    if ours.feasible != theirs["feasible"]:
        mine, real = set(ours.feasible), set(theirs["feasible"])
        yield Mismatch(index, feature, "feasible", detail=(
            f"only ours {sorted(mine - real)}, only kube-scheduler's {sorted(real - mine)}"
            f"{'; ours rejected by ' + str({n: ours.rejected_by.get(n) for n in sorted(real - mine)}) if real - mine else ''}"))
        return
    differing = []
    if theirs["scores"]:
        for plugin in sorted(set(theirs["scores"]) | set(ours.scores)):
            real_scores = theirs["scores"].get(plugin, {})
            mine_scores = ours.scores.get(plugin, {})
            wrong = {n: (mine_scores.get(n, 0), real_scores.get(n, 0)) for n in ours.feasible
                     if mine_scores.get(n, 0) != real_scores.get(n, 0)}
            if wrong:
                differing.append(plugin)
                shown = ", ".join(f"{n} {a} != {b}" for n, (a, b) in sorted(wrong.items())[:4])
                yield Mismatch(index, feature, "score", plugin,
                               f"{len(wrong)}/{len(ours.feasible)} nodes (ours != kube-scheduler's): {shown}")
    if theirs["bound_to"] is not None and theirs["bound_to"] not in ours.best:
        yield Mismatch(index, feature, "choice", ",".join(differing), detail=f"kube-scheduler bound to {theirs['bound_to']}, our best {ours.best}")
    if ours.message != theirs["message"]:
        yield Mismatch(index, feature, "message", detail=f"\n      ours:           {ours.message}"
                                                          f"\n      kube-scheduler: {theirs['message']}")
