"""Replaying kube-scheduler v1.36.2's recorded gang decisions (../shared/reference/kube-scheduler-v1.36.2-dra/gang/,
whose README says how they were recorded) through ``scheduler.testing.Cycles``.

Each file is one cluster state and the gangs (a Workload, its PodGroup and the pods naming it) kube-scheduler
placed on it, one at a time. ``replay`` builds the file's profile under its feature gates, puts the state's
nodes and bound pods in, creates one gang's PodGroup and pods one after another, runs every cycle that is
ready and reads the outcome; ``outcome``/``recorded`` give what is compared: how many pods were bound (all,
some but at least minCount, none), the PodGroup's ``PodGroupScheduled`` condition, and the FailedScheduling
messages of the pods left unbound (as a multiset: which pod gets which message depends on the order, the
README says; how many get each does not).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from scheduler.feature_gates import parse_feature_gates
from scheduler.framework import in_tree_registry
from scheduler.model import NodeInfo, PodInfo
from scheduler.plugins import default_plugins
from scheduler.plugins.gang_scheduling import PODGROUPS
from scheduler.testing import Cycles
from scheduler.testing.builders import Cluster
from tests.reference import REFERENCE_DIR
from tests.unavailable import skip_or_fail

GANG_DIR = REFERENCE_DIR / "kube-scheduler-v1.36.2-dra" / "gang"
WORKLOADS = "scheduling.k8s.io/v1alpha2/workloads"


def gang_files() -> list[Path]:
    return sorted(GANG_DIR.glob("*.json")) if GANG_DIR.is_dir() else []


def gang_folder() -> Path:
    if not GANG_DIR.is_dir():
        skip_or_fail(f"the recorded kube-scheduler v1.36.2 gang decisions are not in {GANG_DIR} (see the project's "
                     "README)")
    return GANG_DIR


def read(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    if doc.get("format") != 1 or doc.get("set") != "gang":
        raise ValueError(f"{path}: format {doc.get('format')!r}, set {doc.get('set')!r}; this replay reads format 1, "
                         "set gang (its README)")
    return doc


def _with_uid(obj: dict[str, Any]) -> dict[str, Any]:
    """The recording left uids out (they differ between runs); the scheduler binds by uid: give each one."""
    meta = obj.setdefault("metadata", {})
    meta.setdefault("uid", f"uid-{meta.get('namespace')}-{meta.get('name')}")
    return obj


def replay(doc: dict[str, Any], probe: dict[str, Any]) -> Cycles:
    """One gang judged on the file's state, every ready cycle run."""
    gates = parse_feature_gates(doc["config"]["featureGates"], source="the recording's featureGates")
    registry = in_tree_registry().with_defaults(default_plugins(gates.enabled))
    objects = doc["objects"]
    cluster = Cluster(namespaces={ns["metadata"]["name"]: dict(ns["metadata"].get("labels") or {})
                                  for ns in objects["namespaces"]})
    nodes = {n["metadata"]["name"]: NodeInfo.from_api(n) for n in objects["nodes"]}
    for pod in objects["pods"]:
        nodes[pod["spec"]["nodeName"]].add_pod(PodInfo.from_api(_with_uid(json.loads(json.dumps(pod)))))
    cluster.nodes = list(nodes.values())
    sim = Cycles(cluster, registry=registry, config=doc["config"]["kubeSchedulerConfiguration"],
                 objects={WORKLOADS: [probe["workload"]], PODGROUPS: [_with_uid(dict(probe["podgroup"]))]})
    for pod in probe["pods"]:
        sim.add_pod(_with_uid(json.loads(json.dumps(pod))))
    sim.run_until_idle()
    return sim


def _bound_class(bound: int, size: int, minimum: int) -> str:
    if bound == size:
        return "all"
    if bound == 0:
        return "none"
    return "some>=minCount" if bound >= minimum else "some<minCount"


def _min_count(probe: dict[str, Any]) -> int:
    return int(probe["podgroup"]["spec"]["schedulingPolicy"].get("gang", {}).get("minCount", 1))


def recorded(probe: dict[str, Any]) -> dict[str, Any]:
    ks = probe["kube_scheduler"]
    size = len(probe["pods"])
    condition = next((c for c in (ks["podgroup_status"] or {}).get("conditions", [])
                      if c["type"] == "PodGroupScheduled"), None)
    messages = Counter(p["podScheduled"]["message"] for p in ks["pods"].values()
                       if p["bound_to"] is None and p["podScheduled"])
    return {"bound": _bound_class(ks["bound_count"], size, _min_count(probe)),
            "condition": None if condition is None else (condition["status"], condition["reason"],
                                                          condition.get("message", "")),
            "messages": dict(sorted(messages.items()))}


def outcome(sim: Cycles, probe: dict[str, Any]) -> dict[str, Any]:
    names = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in probe["pods"]}
    bound = [key for key in names if key in sim.placements]
    messages: Counter[str] = Counter()
    for key in sorted(names - set(bound)):
        failed = [e for e in sim.events_for(key) if e.reason == "FailedScheduling"]
        if failed:
            messages[failed[-1].message] += 1
    group = probe["podgroup"]["metadata"]
    path = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{group['namespace']}/podgroups/{group['name']}/status"
    written = [c.body for c in sim.api.calls if c.method == "PATCH" and c.path == path and c.error is None]
    condition = None
    if written:
        last = next(c for c in written[-1]["status"]["conditions"] if c["type"] == "PodGroupScheduled")
        condition = (last["status"], last["reason"], last.get("message", ""))
    return {"bound": _bound_class(len(bound), len(names), _min_count(probe)), "condition": condition,
            "messages": dict(sorted(messages.items()))}
