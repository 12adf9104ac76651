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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.config import parse_config
from scheduler.framework import ClusterView, CycleState, Extensions, ObjectStore, Profile, build_profiles
from scheduler.framework.post_filter import run_post_filters
from scheduler.framework.preemption import PodDisruptionBudget
from scheduler.model import PodInfo, PodSpecError
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from scheduler.testing import FakeHandle
from tests.reference import REFERENCE_DIR
from tests.unavailable import skip_or_fail

CORPUS_DIR = REFERENCE_DIR / "kube-scheduler-v1.36.2"
DRA_CORPUS_DIR = REFERENCE_DIR / "kube-scheduler-v1.36.2-dra"  # DRA devices and gangs, the same binaries
SETS = ("cases", "messages")


def corpus_files(set_name: str, corpus: Path = CORPUS_DIR) -> list[Path]:
    """The files of one set, for parametrising (empty without the folder: ``corpus_folder`` says why)."""
    folder = corpus / set_name
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def corpus_folder(set_name: str, corpus: Path = CORPUS_DIR) -> Path:
    folder = corpus / set_name
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
    kinds: dict[str, ObjectStore] = field(default_factory=dict)  # the watched kinds, as their informers keep them


def with_uid(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with a metadata.uid: files that leave uids out (the DRA corpus: they differ between
    recordings) get a stable one made of the kind, namespace and name, as every object from an API server has
    one (the cache keys pods by it)."""
    meta = obj.get("metadata") or {}
    if meta.get("uid"):
        return obj
    uid = f"uid-{obj.get('kind', '').lower()}-{meta.get('namespace', '')}-{meta.get('name', '')}"
    return {**obj, "metadata": {**meta, "uid": uid}}


def load_state(doc: dict[str, Any]) -> State:
    objects = doc["objects"]
    cache = Cache()
    handlers = CacheHandlers(cache)
    for namespace in objects["namespaces"]:
        handlers.namespace_changed(namespace)
    for node in objects["nodes"]:
        handlers.node_changed(node)
    for pod in objects["pods"]:  # a terminal pod is dropped by the handler, as the informer never lists one
        handlers.pod_changed(with_uid(pod))
    for claim in objects.get("persistentvolumeclaims", ()):
        handlers.claim_changed(claim)
    for volume in objects.get("persistentvolumes", ()):
        handlers.volume_changed(volume)
    for storage_class in objects.get("storageclasses", ()):
        handlers.storage_class_changed(storage_class)
    config = dict(doc["config"]["kubeSchedulerConfiguration"])
    # kube-scheduler gives a configuration without profiles one named default-scheduler; this scheduler asks
    # for its profiles by name (as a second scheduler it must not take default-scheduler's pods unasked).
    config.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    profiles = build_profiles(parse_config(config, "config.kubeSchedulerConfiguration"))
    budgets = [PodDisruptionBudget.from_api(b) for b in objects.get("poddisruptionbudgets", ())]
    # What a kind informer does with each object it lists (scheduler.runtime.eventhandlers.kind_informer).
    kinds = {kind: ObjectStore(kind) for kind in sorted(frozenset().union(*(p.watches for p in profiles.values())))}
    for store in kinds.values():
        for obj in objects.get(store.resource.resource, ()):
            store.put(with_uid(obj))
    return State(cache, profiles, budgets, kinds)


@dataclass
class Verdict:
    feasible: list[str]
    scores: dict[str, dict[str, int]]  # plugin -> node -> weighted score (two feasible nodes or more)
    best: list[str]  # the nodes tied for the highest total
    message: str | None
    rejected_by: dict[str, str] = field(default_factory=dict)  # node -> plugin that rejected it
    error: str | None = None  # the attempt failed with this error instead of deciding


def errors_node_by_node(state: State, pod_obj: dict[str, Any]) -> set[str]:
    """The errors deciding ``pod_obj`` fails with when each node of the state is filtered alone: kube-scheduler
    filters nodes in parallel and the first error wins, so any of these is one it could have reported."""
    found = set()
    for node in state.cache.snapshot().nodes:
        verdict = judge(state, pod_obj, only=node.name)
        if verdict.error is not None:
            found.add(verdict.error)
    return found


def judge(state: State, pod_obj: dict[str, Any], only: str | None = None) -> Verdict:
    """Decide ``pod_obj`` on the state as the scheduling cycle does (a fresh profile per probe: probes never
    see each other); ``only``: among that node alone, the others still in the cluster view."""
    profiles = state.profiles
    name = (pod_obj.get("spec") or {}).get("schedulerName") or "default-scheduler"
    profile = profiles[name]
    profile = Profile(profile.scheduler_name, profile.filters, profile.scores,
                      profile.percentage_of_nodes_to_score, profile.post_filter)
    try:
        pod = PodInfo.from_api(with_uid(pod_obj))
    except PodSpecError as err:
        return Verdict([], {}, [], f"invalid pod spec: {err.field}: {err.reason}")
    snap = state.cache.snapshot()
    cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, state.cache.volumes, snap.traits,
                          kinds=state.kinds)
    rng = random.Random(0)
    nodes = snap.nodes if only is None else [n for n in snap.nodes if n.name == only]
    try:
        result = profile.schedule(pod, nodes, rng, cluster, {})
    except Exception as err:  # noqa: BLE001  # a plugin failed the attempt (PodScheduled reason SchedulerError)
        return Verdict([], {}, [], None, error=profile.raised(err).reason)
    if result.node_name is None:
        post = run_post_filters(profile, pod, result, nodes, cluster, state.budgets, {}, rng)
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
    kind: str  # error | feasible | score | choice | message | devices
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
    if ours.error != theirs.get("scheduler_error"):
        yield Mismatch(index, feature, "error", detail=f"\n      ours:           {ours.error}"
                                                        f"\n      kube-scheduler: {theirs.get('scheduler_error')}")
        return
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


# ---- DRA: the probe's claims, and the devices allocated on the chosen node --------------------------------------

CLAIMS = "resource.k8s.io/v1/resourceclaims"
FINALIZER = "resource.kubernetes.io/delete-protection"  # what kube-scheduler puts on a claim it allocates


@contextmanager
def probe_claims(state: State, probe: dict[str, Any]) -> Iterator[None]:
    """The probe's claims in the claims' store while the block runs, as the informer delivers new objects,
    and gone after it (probes never see each other)."""
    store = state.kinds.get(CLAIMS)
    claims = probe.get("claims") or []
    if claims and store is None:
        raise AssertionError(f"probe {probe['index']} has ResourceClaims and no plugin of the profile watches {CLAIMS}")
    for claim in claims:
        store.put(with_uid(claim))  # type: ignore[union-attr]
    try:
        yield
    finally:
        for claim in claims:
            store.remove(claim)  # type: ignore[union-attr]


def allocations_on(state: State, pod_obj: dict[str, Any], node: str) -> dict[str, dict[str, Any]]:
    """claim name -> what the profile's Reserve and PreBind points write to the claim for the pod on ``node``:
    its ``allocation`` (less the allocationTimestamp, a time), the pod names in ``reservedFor`` and whether it
    has the finalizer. They run as the binding cycle runs them, with a test handle whose API answers with what
    was sent; the claims' store holds what was written, and is put back after."""
    name = (pod_obj.get("spec") or {}).get("schedulerName") or "default-scheduler"
    profile = state.profiles[name]
    pod = PodInfo.from_api(with_uid(pod_obj))
    snap = state.cache.snapshot()
    cluster = ClusterView(snap.nodes, snap.namespace_labels, snap.pod_index, state.cache.volumes, snap.traits,
                          kinds=state.kinds)
    extensions = Extensions(profile.points, FakeHandle(name, objects=state.kinds))
    cycle = CycleState(cluster, node)
    for point, status in (("Reserve", extensions.reserve(cycle, pod, node)),
                          ("PreBind", extensions.pre_bind(cycle, pod, node))):
        if status is not None and not status.ok:
            raise AssertionError(f"{point} refused {pod.key} on {node}: {status.reasons}")
    store = state.kinds.get(CLAIMS)
    found: dict[str, dict[str, Any]] = {}
    for ref in (pod_obj.get("spec") or {}).get("resourceClaims") or ():
        claim_name = ref.get("resourceClaimName")
        claim = (store.get_object(pod.namespace, claim_name) if store is not None and claim_name else None) or {}
        status = claim.get("status") or {}
        allocation = status.get("allocation")
        if allocation is not None:
            allocation = {k: v for k, v in allocation.items() if k != "allocationTimestamp"}
        found[claim_name] = {"allocation": allocation,
                             "reserved_for": [r.get("name") for r in status.get("reservedFor") or ()],
                             "finalizer": FINALIZER in ((claim.get("metadata") or {}).get("finalizers") or ())}
        if store is not None:
            store.restore(pod.namespace, claim_name)
    return found


def compare_allocations(probe: dict[str, Any], ours: dict[str, dict[str, Any]]) -> Iterator[Mismatch]:
    """The devices allocated to each claim on the node kube-scheduler bound the pod to, the pods the claim is
    reserved for, and kube-scheduler's finalizer on every claim it allocated."""
    recorded = probe["kube_scheduler"]
    theirs = recorded.get("allocations") or {}
    for claim in sorted(set(theirs) | set(ours)):
        mine = ours.get(claim) or {}
        wanted = {"allocation": theirs.get(claim), "reserved_for": (recorded.get("reserved_for") or {}).get(claim, []),
                  "finalizer": theirs.get(claim) is not None}
        if mine != wanted:
            yield Mismatch(probe["index"], probe["feature"], "devices", detail=(
                f"claim {claim} on {recorded['bound_to']}:"
                f"\n      ours:           {json.dumps(mine, sort_keys=True)}"
                f"\n      kube-scheduler: {json.dumps(wanted, sort_keys=True)}"))
