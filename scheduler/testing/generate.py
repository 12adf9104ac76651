"""Random nodes and pods for the contract checks, covering the edge cases batch forms get wrong: taints of
every effect, cordoned nodes, zero and missing capacities, full pod slots, extended resources, pods with and
without requests, tolerations, node selectors and pod (anti-)affinity; and labels and annotations drawn from
a vocabulary holding the keys and values a plugin reads (``Vocabulary.of``: its args' defaults and the map
keys of its requeue fields), so that a user's plugin meets pods and nodes it acts on."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.framework import Plugin
from scheduler.model import NodeInfo, PodInfo
from scheduler.testing.builders import node_info, pod_info

ZONE = "topology.kubernetes.io/zone"
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
POD_AFFINITIES: list[dict[str, Any] | None] = [None, None, *(
    {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}
    for kind in ("podAntiAffinity", "podAffinity") for app in ("a", "b")
    for key in ("kubernetes.io/hostname", ZONE))]
_MAPS = ("labels", "annotations", "nodeSelector")


@dataclass(frozen=True)
class Vocabulary:
    """Label and annotation keys and values to draw from."""

    keys: tuple[str, ...] = ("app", ZONE)
    values: tuple[str, ...] = ("a", "b", "z1", "z2")

    @classmethod
    def of(cls, plugin: Plugin) -> Vocabulary:
        """The base vocabulary plus what ``plugin`` names: every string in its default args (keys and
        values alike: an args model names the label it reads and the value it wants) and the map keys of
        its requeue fields."""
        words: list[str] = []
        # Default args that do not build are the args check's finding, not this one's.
        with contextlib.suppress(Exception):
            _strings(plugin.default_args().model_dump(warnings=False), words)
        keys = [path.steps[-1] for path in (*plugin.node_fields, *plugin.pod_fields)
                if len(path.steps) >= 3 and path.steps[-2] in _MAPS]
        base = cls()
        return cls(_unique(k for k in (*base.keys, *keys, *words) if k), _unique([*base.values, *words]))


def random_node(rng: random.Random, name: str, vocabulary: Vocabulary = Vocabulary()) -> NodeInfo:
    taints = [{"key": rng.choice(["a", "b", "dedicated"]), "value": rng.choice(["", "x"]),
               "effect": rng.choice(EFFECTS)} for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    allocatable = {"cpu": rng.choice(["0", "1", "4", "64"]), "memory": rng.choice(["0", "1Gi", "8Gi", "256Gi"]),
                   "pods": rng.choice(["0", "2", "110"]), **rng.choice([{}, {"example.com/gpu": "2"}])}
    info = node_info(name=name, taints=taints, unschedulable=rng.random() < 0.2, allocatable=allocatable,
                     labels=_pairs(rng, vocabulary), annotations=_pairs(rng, vocabulary))
    for j in range(rng.choice([0, 1, 3])):
        info.add_pod(random_pod(rng, f"{name}-pod-{j}", vocabulary))
    return info


def random_pod(rng: random.Random, name: str, vocabulary: Vocabulary = Vocabulary()) -> PodInfo:
    requests = rng.choice([None, {}, {"cpu": "500m"}, {"memory": "2Gi"}, {"cpu": "2", "memory": "4Gi"},
                           {"cpu": "100m", "ephemeral-storage": "1Gi"}, {"example.com/gpu": "1"}])
    tolerations = rng.choice([None, [{"operator": "Exists"}], [{"key": "a", "operator": "Exists"}],
                              [{"key": "b", "value": "x", "effect": "PreferNoSchedule"}],
                              [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]])
    spec: dict[str, Any] = {}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    affinity = rng.choice(POD_AFFINITIES)
    if affinity is not None:
        spec["affinity"] = affinity
    if rng.random() < 0.2:
        spec["nodeSelector"] = _pairs(rng, vocabulary, most=1)
    labels = {**_pairs(rng, vocabulary), **rng.choice([{}, {"app": "a"}, {"app": "b"}])}
    return pod_info(name=name, requests=requests, labels=labels, annotations=_pairs(rng, vocabulary), spec=spec)


def _pairs(rng: random.Random, vocabulary: Vocabulary, most: int = 2) -> dict[str, str]:
    return {rng.choice(vocabulary.keys): rng.choice(vocabulary.values) for _ in range(rng.randint(0, most))}


def _strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, into)


def _unique(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))
