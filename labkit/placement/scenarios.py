"""The placement scenarios as data: YAML files in one generic vocabulary, parsed into `ScenarioSet`.

`scenarios.yaml` beside this module holds the built-in ones (they need only kube-scheduler's default
plugins); a plugin folder brings its own (`plugins/<name>/scenarios.yaml`), listed in the lab definition's
`placement.scenarios` or given with `--scenarios FILE`. The vocabulary is documented at the top of
`scenarios.yaml`. Nothing here knows any plugin: a scenario sets node labels, annotations, taints or cordons, creates
objects (a PodGroup, a ConfigMap) and pods (the base pod with a patch, a count, a priority, sets of them) and
states what must follow (bound where, spread how evenly, Pending why, preempted how many, sets bound whole or
not at all, nothing bound for a while). The runner does it (checks.py) and the judge checks it.
A bad file is rejected before anything changes, naming the file, the scenario and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from labdef.errors import UserError
from labdef.lab import StrictModel
from scheduler.validation import field_problems

SCENARIOS_FILE = Path(__file__).resolve().parent / "scenarios.yaml"
# Run after the built-in ones in a lab with the DRA example driver (lab.yaml dra.example_driver).
DRA_SCENARIOS_FILE = Path(__file__).resolve().parent / "dra-scenarios.yaml"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"  # kubeadm's, with an empty value
# What a pod patch may not set: the run owns these (pods.scheduler and pods.priority set the last two).
RUN_OWNED = ("metadata.name", "metadata.namespace", "metadata.generateName", "spec.nodeName",
             "spec.schedulerName", "spec.priorityClassName", "spec.priority")


class ScenarioError(UserError):
    """A scenarios file is unusable; the message names the file, the scenario and each bad field."""


class PodDefaults(StrictModel):
    # Unset: the sandbox (pause) image of the lab's Kubernetes minor, already on every node.
    image: str | None = None
    cpu: str = "10m"
    memory: str = "16Mi"


class NodePick(StrictModel):
    """Nodes of the cluster under test: by name, by role (kubeadm's control-plane label; index counts the
    role's nodes in name order), or by labels they carry. Roles and indexes keep a file usable on any lab."""

    name: str | None = None
    role: Literal["control-plane", "worker", "any"] | None = None
    index: int | None = Field(None, ge=0)
    labels: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> NodePick:
        given = [k for k in ("name", "role", "labels") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of name, role or labels")
        if self.index is not None and self.role is None:
            raise ValueError("index goes with role (the role's nodes, in name order)")
        return self

    def pick(self, nodes: Sequence[Mapping[str, Any]]) -> list[str]:
        """The names of the matching nodes, in name order."""
        ordered = sorted(nodes, key=lambda n: n["metadata"]["name"])
        if self.name is not None:
            return [n["metadata"]["name"] for n in ordered if n["metadata"]["name"] == self.name]
        if self.labels is not None:
            return [n["metadata"]["name"] for n in ordered
                    if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in self.labels.items())]
        role = [n["metadata"]["name"] for n in ordered if self.role == "any" or node_role(n) == self.role]
        if self.index is None:
            return role
        return role[self.index:self.index + 1]

    def __str__(self) -> str:
        if self.name is not None:
            return f"node {self.name}"
        if self.labels is not None:
            return "nodes with " + ",".join(f"{k}={v}" for k, v in self.labels.items())
        what = "nodes" if self.role == "any" else f"{self.role} nodes"
        return what if self.index is None else f"{self.role} #{self.index}"


def node_role(node: Mapping[str, Any]) -> str:
    return "control-plane" if CONTROL_PLANE_LABEL in (node["metadata"].get("labels") or {}) else "worker"


class AddedTaint(StrictModel):
    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def as_api(self) -> dict[str, str]:
        return {k: v for k, v in (("key", self.key), ("value", self.value), ("effect", self.effect)) if v is not None}


class NodeChange(StrictModel):
    """What the scenario sets on the selected nodes while it runs; the run restores each node afterwards."""

    select: NodePick
    labels: dict[str, str | None] = Field(default_factory=dict)  # null removes the label
    annotations: dict[str, str | None] = Field(default_factory=dict)  # null removes the annotation
    taints: list[AddedTaint] = Field(default_factory=list)  # added to the node's own
    cordon: bool | None = None  # true: spec.unschedulable; false: uncordon

    @model_validator(mode="after")
    def _changes_something(self) -> NodeChange:
        if not self.labels and not self.annotations and not self.taints and self.cordon is None:
            raise ValueError("set at least one of labels, annotations, taints or cordon")
        return self


class Split(StrictModel):
    """The pods split in name order into equal sets, each labelled `label: <its value>` (a gang per set)."""

    label: str = Field(min_length=1)
    values: list[str] = Field(min_length=1)

    @field_validator("values")
    @classmethod
    def _unique(cls, values: list[str]) -> list[str]:
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"each set needs its own value: {', '.join(repeated)} repeated")
        return values


class Pods(StrictModel):
    count: int | None = Field(None, ge=1, le=500)
    # spread scenarios: this many pods per eligible node (the nodes the scheduler's filters allow for one)
    per_eligible_node: int | None = Field(None, ge=1, le=50)
    # per_eligible_node: this many pods more than per_eligible_node x the eligible nodes
    extra: int = Field(0, ge=0, le=50)
    scheduler: Literal["lab", "unserved"] = "lab"
    # A JSON merge patch (RFC 7386) on the base pod: maps merge, null removes, lists are replaced whole.
    patch: dict[str, Any] = Field(default_factory=dict)
    # The pods' priority: the run creates a PriorityClass with this value and deletes it afterwards.
    priority: int | None = Field(None, ge=-2_000_000_000, le=1_000_000_000)
    # Sets of pods (gangs): the pods split in name order into len(values) equal sets labelled label=value.
    split: Split | None = None

    @model_validator(mode="after")
    def _one_count(self) -> Pods:
        if (self.count is None) == (self.per_eligible_node is None):
            raise ValueError("give exactly one of count or per_eligible_node")
        if self.extra and self.per_eligible_node is None:
            raise ValueError("extra goes with per_eligible_node (pods beyond those per eligible node)")
        if self.split is not None:
            sets = len(self.split.values)
            if self.count is None:
                raise ValueError("split goes with count (pods split into equal sets), not per_eligible_node")
            if self.count % sets:
                raise ValueError(f"split: count {self.count} does not split into {sets} equal sets; make count a "
                                 f"multiple of {sets}")
            if self.split.label in ((self.patch.get("metadata") or {}).get("labels") or {}):
                raise ValueError(f"split.label: {self.split.label} is also set by patch.metadata.labels; set it in "
                                 "one place")
        return self

    def set_of(self, index: int) -> str | None:
        """The split value of the index-th pod (1-based), None without split."""
        if self.split is None or self.count is None:
            return None
        return self.split.values[(index - 1) // (self.count // len(self.split.values))]

    @field_validator("patch")
    @classmethod
    def _patch(cls, patch: dict[str, Any]) -> dict[str, Any]:
        owned = [path for path in RUN_OWNED if _has_path(patch, path.split("."))]
        if owned:
            raise ValueError("\n".join(f"{path}: set by the run, not by a patch (pods.scheduler and "
                                       "pods.priority choose the scheduler and the priority)" for path in owned))
        for key in ("metadata", "spec"):
            if key in patch and not isinstance(patch[key], dict):
                raise ValueError(f"{key}: must be a mapping")
        return patch

    def total(self, eligible: int) -> int:
        return self.count if self.count is not None else (self.per_eligible_node or 0) * eligible + self.extra


def _has_path(data: Mapping[str, Any], path: list[str]) -> bool:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return False
        data = data[key]
    return True


class Fill(StrictModel):
    """Before the scenario's pods: one pod per eligible node requesting all of its free cpu, at this
    priority, each bound before the next (the largest first): the cluster is then full."""

    priority: int = Field(ge=-2_000_000_000, le=1_000_000_000)


class Bound(StrictModel):
    nodes: NodePick | None = None  # unset: any node


class Pending(StrictModel):
    count: int | None = Field(None, ge=1)  # unset: every pod of the scenario
    # Text the FailedScheduling event must contain (kube-scheduler's reasons, "0/N nodes are available: ...")
    reason: str | None = None


class Spread(StrictModel):
    within: int = Field(ge=0)  # max - min pods per eligible node
    # scenario: the scenario's pods only (topology spread); all: every pod on the node, those already
    # there included (when they are too uneven for the batch to level, it must level them as far as it can)
    counting: Literal["scenario", "all"] = "scenario"


class Untouched(StrictModel):
    seconds: float = Field(5.0, gt=0, le=600)  # how long the pods must stay Pending with no event


class NoneBound(StrictModel):
    seconds: float = Field(gt=0, le=600)  # how long none of the pods may be bound (events are allowed)


class AllOrNone(StrictModel):
    """Each set of pods (pods.split's, else all of the scenario's) ends bound whole or not at all."""

    whole_sets: int | None = Field(None, ge=0)  # how many sets end bound whole (unset: every set)
    # once whole_sets are bound, how long the others are watched for a member bound on its own
    settle_seconds: float = Field(5.0, ge=0, le=600)


class AfterRestart(StrictModel):
    pending_seconds: float = Field(3.0, gt=0, le=600)  # Pending time with the scheduler scaled to zero


class Expect(StrictModel):
    bound: Bound | None = None
    pending: Pending | None = None
    spread: Spread | None = None
    preempted: int | None = Field(None, ge=1)  # fill pods preempted, each with a Preempted event
    untouched: Untouched | None = None
    bound_after_restart: AfterRestart | None = None
    bound_all_or_none: AllOrNone | None = None
    none_bound: NoneBound | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Expect:
        given = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if not given:
            raise ValueError("expect at least one of " + ", ".join(type(self).model_fields))
        for alone in ("untouched", "bound_after_restart", "bound_all_or_none", "none_bound"):
            if alone in given and len(given) > 1:
                raise ValueError(f"{alone} goes alone (it waits in its own way): remove "
                                 + ", ".join(k for k in given if k != alone))
        if self.bound is not None and self.pending is not None and self.pending.count is None:
            raise ValueError("pending.count: say how many stay Pending when others are expected bound")
        return self

    def describe(self) -> str:
        """The short `expected` column of the verdict table."""
        parts = []
        if self.bound is not None:
            parts.append(f"bound to {self.bound.nodes}" if self.bound.nodes else "bound")
        if self.spread is not None:
            parts.append(f"spread within {self.spread.within}" + (" (all pods)" if self.spread.counting == "all"
                                                                     else ""))
        if self.preempted is not None:
            parts.append(f"{self.preempted} preempted")
        if self.pending is not None:
            parts.append(f"{self.pending.count or 'all'} Pending" + (f": {self.pending.reason}"
                                                                     if self.pending.reason else ""))
        if self.untouched is not None:
            parts.append("Pending, no events")
        if self.bound_after_restart is not None:
            parts.append("waits at 0 replicas, then bound")
        if self.bound_all_or_none is not None:
            whole = self.bound_all_or_none.whole_sets
            parts.append("each set bound whole or not at all" + (f" ({whole} whole)" if whole is not None else ""))
        if self.none_bound is not None:
            parts.append(f"none bound for {self.none_bound.seconds:g} s")
        return "; ".join(parts)


class Requires(StrictModel):
    """The scheduler's profile must enable these plugins (with these args), else the scenario is skipped."""

    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)  # plugin name -> args it must have


def _object_problem(obj: Any) -> str:
    """What is wrong with one of a scenario's `objects` ("" when nothing)."""
    if not isinstance(obj, dict):
        return "must be a Kubernetes object: a mapping with apiVersion, kind and metadata.name"
    meta = obj.get("metadata")
    missing = [f for f, v in (("apiVersion", obj.get("apiVersion")), ("kind", obj.get("kind")),
                              ("metadata.name", meta.get("name") if isinstance(meta, dict) else None))
               if not isinstance(v, str) or not v]
    if missing:
        return f"{', '.join(missing)} missing (every object needs apiVersion, kind and metadata.name)"
    if "namespace" in meta or "generateName" in meta:
        return "metadata.namespace and metadata.generateName are the run's: it creates the object in its namespace"
    return ""


class Scenario(StrictModel):
    id: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$")
    title: str
    requires: Requires = Requires()
    nodes: list[NodeChange] = Field(default_factory=list)
    # Created (namespaced ones in the run's namespace) before the pods, deleted after the scenario.
    objects: list[dict[str, Any]] = Field(default_factory=list)
    fill: Fill | None = None
    pods: Pods
    expect: Expect
    opt_in: Literal["include-restart"] | None = None
    source: str = Field("", exclude=True)  # the file it came from (set by the loader, not the file)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        expect = self.expect
        if expect.preempted is not None and self.fill is None:
            raise ValueError("expect.preempted needs fill (the lower-priority pods to preempt)")
        if expect.preempted is not None and self.pods.priority is None:
            raise ValueError("expect.preempted needs pods.priority (above fill.priority)")
        if self.fill is not None and self.pods.priority is not None and self.pods.priority <= self.fill.priority:
            raise ValueError("pods.priority must be above fill.priority, or nothing can be preempted")
        pending = expect.pending.count if expect.pending is not None else None
        if pending is not None and self.pods.count is not None and pending > self.pods.count:
            raise ValueError(f"expect.pending.count: {pending} is more than pods.count")
        problems = [f"objects[{i}]: {problem}" for i, obj in enumerate(self.objects) if (problem := _object_problem(obj))]
        if problems:
            raise ValueError("\n".join(problems))
        keys = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in self.objects]
        repeated = sorted({f"{k[1]} {k[2]}" for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"objects: {', '.join(repeated)} given twice")
        sets = len(self.pods.split.values) if self.pods.split is not None else 1
        whole = expect.bound_all_or_none.whole_sets if expect.bound_all_or_none is not None else None
        if whole is not None and whole > sets:
            raise ValueError(f"expect.bound_all_or_none.whole_sets: {whole} is more than the {sets} set(s) of pods "
                             "(pods.split makes sets)")
        if expect.bound_after_restart is not None and self.opt_in != "include-restart":
            raise ValueError("expect.bound_after_restart changes the cluster's scheduler: set opt_in: include-restart")
        return self


class ScenarioSet(StrictModel):
    pod: PodDefaults = PodDefaults()
    scenarios: list[Scenario] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> ScenarioSet:
        ids = [s.id for s in self.scenarios]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"scenario ids must be unique: {', '.join(dupes)} repeated")
        return self

    def selected(self, include_restart: bool = False, only: list[str] | None = None) -> list[Scenario]:
        """The scenarios to run: opt-in ones only when asked for, and only those named in `only`."""
        chosen = [s for s in self.scenarios if s.opt_in is None or (include_restart and s.opt_in == "include-restart")]
        if only:
            unknown = sorted(set(only) - {s.id for s in self.scenarios})
            if unknown:
                known = ", ".join(s.id for s in self.scenarios)
                raise ScenarioError(f"unknown scenario {', '.join(unknown)} (known: {known})")
            chosen = [s for s in chosen if s.id in only]
        return chosen


def _named(problem: str, data: Mapping[str, Any]) -> str:
    """`scenarios[2].pods.count: ...` -> `scenario 'spread' (scenarios[2]): pods.count: ...`."""
    head, dot, rest = problem.partition("].")
    if not problem.startswith("scenarios[") or not dot:
        return problem
    try:
        index = int(head.removeprefix("scenarios["))
        name = data["scenarios"][index]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        return problem
    return f"scenario {name!r} ({head}]): {rest}"


def parse_scenarios(data: object, source: str = "<scenarios>") -> ScenarioSet:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping with a `scenarios` list")
    try:
        parsed = ScenarioSet.model_validate(data)
    except ValidationError as err:
        lines = "\n".join(f"  - {_named(p, data)}" for p in field_problems(err))
        raise ScenarioError(f"{source}: the placement scenarios are invalid:\n{lines}") from None
    return parsed.model_copy(update={"scenarios": [s.model_copy(update={"source": source})
                                                   for s in parsed.scenarios]})


def load_scenario_file(path: str | Path) -> ScenarioSet:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read the placement scenarios: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ScenarioError(f"{path}: not valid YAML: {err}") from None
    return parse_scenarios(data, str(path))


def load_scenarios(paths: Iterable[str | Path] = (SCENARIOS_FILE,)) -> ScenarioSet:
    """One set from several files, in order: the first file's `pod` defaults; ids unique across files."""
    sets = [load_scenario_file(p) for p in paths]
    if not sets:
        raise ScenarioError("no scenarios file given")
    seen: dict[str, str] = {}
    for scenario in (s for one in sets for s in one.scenarios):
        if scenario.id in seen:
            raise ScenarioError(f"{scenario.source}: scenario {scenario.id!r} is also in {seen[scenario.id]}; "
                                "give one of them another id")
        seen[scenario.id] = scenario.source
    return ScenarioSet.model_construct(pod=sets[0].pod, scenarios=[s for one in sets for s in one.scenarios])
