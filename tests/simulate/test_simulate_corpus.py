"""The recorded decisions of a real kube-scheduler v1.36.2 (tests/kube_scheduler_corpus.py) replayed through
`./lab simulate`'s engine: each probe pod, as a one-pod workload on its file's cluster under its file's
configuration, ends where the corpus replay test's verdict says (bound to one of the tied best nodes, or
pending with the same FailedScheduling message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.simulate.engine import run_profile
from labkit.simulate.inputs import Arrival, SimProfile, Workload
from scheduler.config import parse_config
from scheduler.framework import in_tree_registry
from scheduler.testing import cluster_from_objects
from tests.kube_scheduler_corpus import corpus_files, corpus_folder, judge, load_state, read

KINDS = {"namespaces": "Namespace", "nodes": "Node", "pods": "Pod"}


def _replay(path: Path) -> list[str]:
    doc = read(path)
    state = load_state(doc)
    objects = [dict(obj, kind=kind) for plural, kind in KINDS.items() for obj in doc["objects"][plural]]
    cluster = cluster_from_objects(objects, str(path))
    config = dict(doc["config"]["kubeSchedulerConfiguration"])
    config.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    registry = in_tree_registry()
    problems = []
    profiles: dict[str, SimProfile] = {}
    for probe in doc["probes"]:
        pod = probe["pod"]
        name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if name not in profiles:
            chosen = [p for p in config["profiles"] if (p.get("schedulerName") or "default-scheduler") == name]
            profiles[name] = SimProfile(name, name, parse_config({**config, "profiles": chosen}, str(path), registry),
                                        registry)
        profile = profiles[name]
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        run = run_profile(profile, cluster, Workload([Arrival(0.0, pod, None, "probe")]), until=1.0)
        verdict = judge(state, pod)
        if verdict.best:
            if run.node_of.get(key) not in verdict.best:
                problems.append(f"probe {probe['index']}: simulate bound it to {run.node_of.get(key)} "
                                f"({run.pending.get(key)}), the replay's best are {verdict.best}")
        elif run.pending.get(key) != verdict.message:
            problems.append(f"probe {probe['index']}: simulate: {run.node_of.get(key) or run.pending.get(key)}\n"
                            f"      replay:   {verdict.message}")
    return problems


@pytest.mark.parametrize("set_name", ["cases", "messages"])
def test_simulate_ends_each_probe_where_the_replay_decides(set_name: str) -> None:
    corpus_folder(set_name)
    problems = {path.name: p for path in corpus_files(set_name) if (p := _replay(path))}
    assert not problems, "\n".join(f"{name}:\n  " + "\n  ".join(p) for name, p in problems.items())
