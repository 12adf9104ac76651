"""`./lab explain POD [--what-if FILE]`: why the lab's scheduler would put a pod where it would, node by
node, from the cluster's current state and the configuration the deployed scheduler runs (explain.py finds
it). A pod already bound is explained as if it were not (its own requests not counted), with where it is
bound. With --what-if the pod is the manifest in FILE, named POD, read and validated as the scheduler reads
pods and explained without being created (a pod of that name already there is left out), with what the API
server's admission would add at creation (labkit.placement.admission: RuntimeClass overhead, priority,
default tolerations; what it cannot apply is named in the notes). The output: explain_view's table, or
`Explanation.as_json()`."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from labdef.lab import Lab
from labkit import lab_plugins
from labkit.kube import Kube, pod_path
from labkit.placement.admission import AdmissionRefused, ClusterPolicy, admit
from labkit.placement.explain import (
    ExplainError,
    Explanation,
    SchedulerConfig,
    explain_in_cluster,
    explain_readable_pod,
    load_scheduler_config,
    read_cluster,
)
from labkit.placement.explain_log import apply_log, last_words
from labkit.placement.explain_points import WOULD_WAIT
from labkit.placement.explain_view import print_explanation
from scheduler.model import PodInfo, PodSpecError

DEFAULT_NAMESPACE = "default"


@dataclass
class ExplainOptions:
    kubeconfig: Path
    pod: str
    context: str | None = None
    namespace: str | None = None  # None: the manifest's, else "default"
    what_if: Path | None = None
    scheduler_config: Path | None = None


def explain_target(lab: Lab, options: ExplainOptions) -> Explanation:
    """Explain the named pod, or with --what-if the manifest as that pod. Raises UserError subclasses."""
    if options.pod.startswith("-"):  # invoke takes `./lab explain --help` as a pod named --help
        raise ExplainError(f"{options.pod!r} is not a pod name; for help: ./lab explain --help")
    manifest = load_what_if(options.what_if, options.pod, options.namespace) if options.what_if else None
    plugins = lab_plugins.registry(lab)  # every plugin the scheduler runs, the lab's own included
    with contextlib.closing(Kube.from_kubeconfig(options.kubeconfig, options.context)) as kube:
        config = load_scheduler_config(kube, lab, options.scheduler_config, plugins)
        if manifest is None:
            explanation = explain_in_cluster(kube, options.namespace or DEFAULT_NAMESPACE, options.pod, config,
                                             lab.scheduler.name)
            if explanation.outcome == WOULD_WAIT and explanation.likely_state:
                apply_log(explanation, *last_words(kube, lab))
            return explanation
        return explain_manifest(kube, manifest, str(options.what_if), config, lab.scheduler.name)


def explain_manifest(kube: Kube, manifest: dict[str, Any], source: str, config: SchedulerConfig,
                      scheduler_name: str) -> Explanation:
    """The manifest explained in the cluster as it is; a pod of that name already there is left out of it
    (the manifest stands for it: "what if this pod were so")."""
    meta = manifest["metadata"]
    existing = kube.get_or_none(pod_path(meta["namespace"], meta["name"]))
    uid = (existing or {}).get("metadata", {}).get("uid", "")
    try:
        admitted = admit(manifest, read_policy(kube, manifest))
    except AdmissionRefused as err:
        raise ExplainError(f"{source}: the API server would refuse this pod: {err}") from None
    profile = config.profile(scheduler_name)
    notes: list[str] = []
    cluster = read_cluster(kube, skip_uid=uid, watches=profile.watches, notes=notes)
    try:
        explanation = explain_readable_pod(admitted.pod, cluster, profile, config.source, reader=kube.get)
    except PodSpecError as err:  # a field only a plugin reads (an annotation it parses)
        raise _refused(source, err) from None
    explanation.notes.extend(notes)
    if admitted.added:
        explanation.notes.append(f"explained as the API server would create it: {'; '.join(admitted.added)}")
    explanation.notes.extend(admitted.unknown)
    if existing is not None:
        bound = (existing.get("spec") or {}).get("nodeName")
        explanation.notes.append(f"the existing pod {explanation.pod}{f' (bound to {bound})' if bound else ''} "
                                 "is left out: the manifest stands in for it")
    return explanation


def read_policy(kube: Kube, manifest: dict[str, Any]) -> ClusterPolicy:
    """What admission reads for this manifest: its RuntimeClass, the PriorityClasses, its namespace's
    LimitRanges."""
    spec = manifest.get("spec") or {}
    runtime_classes = {}
    name = spec.get("runtimeClassName")
    if name:
        found = kube.get_or_none(f"/apis/node.k8s.io/v1/runtimeclasses/{name}")
        if found is not None:
            runtime_classes[name] = found
    namespace = manifest["metadata"]["namespace"]
    return ClusterPolicy(runtime_classes, kube.items("/apis/scheduling.k8s.io/v1/priorityclasses"),
                         kube.items(f"/api/v1/namespaces/{namespace}/limitranges"))


def load_what_if(path: Path, name: str, namespace: str | None) -> dict[str, Any]:
    """A Pod manifest from a YAML file, named `name`, in `namespace` (else its own, else default), checked
    as the scheduler parses a pod it is to place: a field it cannot read is named, with the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ExplainError(f"{path}: cannot read the manifest: {err.strerror}") from None
    return parse_what_if(text, str(path), name, namespace, "--what-if")


def parse_what_if(text: str, source: str, name: str | None, namespace: str | None,
                  given_by: str = "--what-if") -> dict[str, Any]:
    """load_what_if's checks on YAML text from `source` (a file, or the ui's form); `name` None takes the
    manifest's own metadata.name, which must then be there."""
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ExplainError(f"{source}: not valid YAML: {err}") from None
    if not isinstance(obj, dict) or obj.get("kind") != "Pod" or obj.get("apiVersion") != "v1":
        got = f"kind {obj.get('kind')!r}" if isinstance(obj, dict) else "no mapping"
        raise ExplainError(f"{source}: {given_by} takes one Pod manifest (apiVersion: v1, kind: Pod); got {got}")
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        raise ExplainError(f"{source}: metadata: expected a map")
    # As kubectl refuses a manifest whose namespace differs from --namespace; the name likewise.
    for field, given, own in (("name", name, meta.get("name")), ("namespace", namespace, meta.get("namespace"))):
        if given and own and own != given:
            raise ExplainError(f"{source}: metadata.{field} is {own!r}, not the {given!r} given on the command line")
    name = name or meta.get("name")
    if not name or not isinstance(name, str):
        raise ExplainError(f"{source}: metadata.name: required (the name the pod is explained under)")
    obj = {**obj, "metadata": {**meta, "name": name, "namespace": namespace or meta.get("namespace")
                               or DEFAULT_NAMESPACE}}
    try:
        PodInfo.from_api(obj)
    except PodSpecError as err:
        raise _refused(source, err) from None
    return obj


def _refused(source: str, err: PodSpecError) -> ExplainError:
    return ExplainError(f"{source}: {err.field}: {err.reason}; the scheduler would refuse this pod")


def print_result(out: Console, explanation: Explanation, json_output: bool, every_node: bool = False) -> None:
    if json_output:
        print(json.dumps(explanation.as_json(), indent=2), file=out.file)
        return
    if explanation.bound_to:
        out.print(f"{escape(explanation.pod)} is bound to {escape(explanation.bound_to)}; explained as if it "
                  "were not (its own requests not counted on its node)")
    print_explanation(out, explanation, every_node=every_node)
