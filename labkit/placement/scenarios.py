"""The placement scenarios as data: `scenarios.yaml` beside this module, parsed into `ScenarioSet`.

Each scenario says which pods to create (how many, whether they ask for the high-speed network, which
scheduler they name, the constraints among them), what to do with the high-speed node label while it runs, and what placement to
expect. The runner turns that into pods (templates/placement/pod.yaml.j2) and the judge checks it.
A bad file is rejected up front with the field's path, like the lab definition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from labdef.errors import UserError
from labdef.lab import StrictModel
from scheduler.validation import field_problems

SCENARIOS_FILE = Path(__file__).resolve().parent / "scenarios.yaml"

Placement = Literal["labelled-node", "least-loaded-spread", "unschedulable", "ignored", "bound-after-restart",
                    "one-per-node", "even-spread", "preempts"]


class ScenarioError(UserError):
    """The scenarios file is unusable; the message names the file and each bad field."""


class PodDefaults(StrictModel):
    # Unset: the sandbox (pause) image of the lab's Kubernetes minor, already on every node.
    image: str | None = None
    cpu: str = "10m"
    memory: str = "16Mi"


class Pods(StrictModel):
    count: int | None = Field(None, ge=1, le=500)
    # spread scenarios: this many pods per eligible node (the batch must be able to level them)
    per_eligible_node: int | None = Field(None, ge=1, le=50)
    # per_eligible_node: this many pods more than per_eligible_node x the eligible nodes
    extra: int = Field(0, ge=0, le=50)
    network: Literal["high-speed"] | None = None
    scheduler: Literal["lab", "unserved"] = "lab"
    # Constraints among the scenario's pods (selected by their scenario label), over kubernetes.io/hostname:
    # a required podAntiAffinity term, or a topologySpreadConstraints entry with maxSkew 1.
    anti_affinity: Literal["required"] | None = None
    topology_spread: Literal["DoNotSchedule"] | None = None

    @model_validator(mode="after")
    def _one_count(self) -> Pods:
        if (self.count is None) == (self.per_eligible_node is None):
            raise ValueError("give exactly one of count or per_eligible_node")
        if self.extra and self.per_eligible_node is None:
            raise ValueError("extra goes with per_eligible_node (pods beyond those per eligible node)")
        return self


class Expect(StrictModel):
    placement: Placement
    observe_seconds: float = Field(5.0, gt=0, le=600)  # ignored: how long the pod must stay untouched
    pending_seconds: float = Field(3.0, gt=0, le=600)  # bound-after-restart: Pending time at zero replicas


class Scenario(StrictModel):
    id: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$")
    title: str
    high_speed_label: Literal["applied", "removed", "untouched"] = "untouched"
    pods: Pods
    expect: Expect
    opt_in: Literal["include-restart"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        kind = self.expect.placement
        if kind == "labelled-node" and (self.high_speed_label != "applied" or self.pods.network is None):
            raise ValueError("labelled-node needs high_speed_label: applied and pods.network: high-speed")
        if kind == "unschedulable" and (self.high_speed_label != "removed" or self.pods.network is None):
            raise ValueError("unschedulable needs high_speed_label: removed and pods.network: high-speed")
        if kind == "least-loaded-spread" and self.pods.per_eligible_node is None:
            raise ValueError("least-loaded-spread needs pods.per_eligible_node (the batch size per worker)")
        if kind == "ignored" and self.pods.scheduler != "unserved":
            raise ValueError("ignored needs pods.scheduler: unserved")
        if kind == "one-per-node" and (self.pods.anti_affinity is None or self.pods.per_eligible_node != 1):
            raise ValueError("one-per-node needs pods.anti_affinity: required and pods.per_eligible_node: 1")
        if kind == "even-spread" and (self.pods.topology_spread is None or self.pods.per_eligible_node is None):
            raise ValueError("even-spread needs pods.topology_spread and pods.per_eligible_node")
        if kind == "preempts" and self.pods.count != 1:
            raise ValueError("preempts needs pods.count: 1 (the high-priority pod; the fillers are one per worker)")
        if kind == "bound-after-restart" and self.opt_in != "include-restart":
            raise ValueError("bound-after-restart changes the cluster's scheduler: set opt_in: include-restart")
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


def parse_scenarios(data: object, source: str = "<scenarios>") -> ScenarioSet:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping with a `scenarios` list")
    try:
        return ScenarioSet.model_validate(data)
    except ValidationError as err:
        lines = "\n".join(f"  - {p}" for p in field_problems(err))
        raise ScenarioError(f"{source}: the placement scenarios are invalid:\n{lines}") from None


def load_scenarios(path: str | Path = SCENARIOS_FILE) -> ScenarioSet:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read the placement scenarios: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ScenarioError(f"{path}: not valid YAML: {err}") from None
    return parse_scenarios(data, str(path))
