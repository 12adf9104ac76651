"""The two files `./lab simulate` reads, as pydantic models: a cluster of node pools (or Kubernetes Node and
Pod documents, read by ``scheduler.testing.cluster_from_yaml``) and a workload of groups of pods arriving
over simulated time. A wrong field is refused by file, item and field before anything runs
(``SimulateInputError``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labdef.errors import UserError

__all__ = ["ClusterFile", "Gang", "NodePool", "SimulateInputError", "WorkloadFile", "WorkloadItem",
           "load_cluster_file", "load_workload_file"]


class SimulateInputError(UserError):
    """A simulate input file cannot be used; the message names the file, the item and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Taint(_Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: str = Field(pattern="^(NoSchedule|PreferNoSchedule|NoExecute)$")


class NodePool(_Strict):
    """``count`` nodes named ``<name>-<i>`` with the same capacity, labels and taints, spread round-robin
    over ``zones`` (the label topology.kubernetes.io/zone)."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    count: int = Field(ge=1, le=100_000)
    capacity: dict[str, str | int] = Field(default_factory=lambda: {"cpu": "4", "memory": "16Gi", "pods": "110"})
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)


class ClusterFile(_Strict):
    """A cluster given as node pools."""

    pools: list[NodePool] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> ClusterFile:
        names = [p.name for p in self.pools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"pool names must differ: {', '.join(dupes)} given twice")
        return self


class Gang(_Strict):
    """The item's pods form a gang: a PodGroup (scheduling.x-k8s.io/v1alpha1, examples/coscheduling) named
    after the item, which a gang plugin such as Coscheduling places whole or not at all."""

    minMember: int | None = Field(None, ge=1)  # default: every replica
    scheduleTimeoutSeconds: int = Field(60, ge=1)


class WorkloadItem(_Strict):
    """``replicas`` pods made from ``template`` (a Pod's metadata and spec), arriving at ``at`` seconds, all
    at once or ``rate`` per second, each running ``duration`` seconds once bound (then it finishes and frees
    its room; unset: it runs to the end)."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    namespace: str = "default"
    replicas: int = Field(1, ge=1, le=1_000_000)
    at: float = Field(0.0, ge=0)
    rate: float | None = Field(None, gt=0)
    duration: float | None = Field(None, gt=0)
    priority: int | None = None
    requests: dict[str, str | int] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    template: dict[str, Any] = Field(default_factory=dict)
    gang: Gang | None = None

    @model_validator(mode="after")
    def _template(self) -> WorkloadItem:
        unknown = sorted(set(self.template) - {"metadata", "spec"})
        if unknown:
            raise ValueError(f"template holds a Pod's metadata and spec only, not {', '.join(unknown)}")
        if self.gang is not None and self.gang.minMember is not None and self.gang.minMember > self.replicas:
            raise ValueError(f"gang.minMember {self.gang.minMember} is more than replicas {self.replicas}: "
                             "the gang could never be complete")
        return self


class WorkloadFile(_Strict):
    items: list[WorkloadItem] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> WorkloadFile:
        names = [(i.namespace, i.name) for i in self.items]
        dupes = sorted({f"{ns}/{n}" for ns, n in names if names.count((ns, n)) > 1})
        if dupes:
            raise ValueError(f"item names must differ within a namespace: {', '.join(dupes)} given twice")
        return self


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SimulateInputError(f"{path}: cannot be read: {err.strerror}") from None
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise SimulateInputError(f"{path}: not YAML: {err}") from None


def _explain(path: Path, err: ValidationError, data: Any, list_key: str, what: str) -> SimulateInputError:
    lines = []
    for problem in err.errors():
        loc = list(problem["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] == list_key and isinstance(loc[1], int):
            item = data.get(list_key, [])[loc[1]] if isinstance(data.get(list_key), list) else None
            name = item.get("name") if isinstance(item, dict) else None
            where = f"{list_key}[{loc[1]}]" + (f" ({name})" if name else "")
            loc = loc[2:]
        field = ".".join(str(part) for part in loc)
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = "unknown field (a typo?)"
        lines.append(f"  - {': '.join(part for part in (where, field) if part)}: {message}")
    return SimulateInputError(f"{path}: not a valid {what} file:\n" + "\n".join(lines))


def load_cluster_file(path: Path) -> ClusterFile | None:
    """The file's node pools, or None when it holds Kubernetes documents (Node, Pod, Namespace) instead."""
    documents = [d for d in _read(path) if d is not None]
    if not documents:
        raise SimulateInputError(f"{path}: empty; give node pools (pools: [...]) or Node and Pod documents")
    first = documents[0]
    if isinstance(first, dict) and "kind" in first:
        return None
    if len(documents) != 1 or not isinstance(first, dict):
        raise SimulateInputError(f"{path}: a pools file is one YAML document with `pools:` "
                                 "(or give Node and Pod documents, each with its kind)")
    try:
        return ClusterFile.model_validate(first)
    except ValidationError as err:
        raise _explain(path, err, first, "pools", "cluster") from None


def load_workload_file(path: Path) -> WorkloadFile:
    documents = [d for d in _read(path) if d is not None]
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise SimulateInputError(f"{path}: a workload file is one YAML document with `items:`")
    try:
        return WorkloadFile.model_validate(documents[0])
    except ValidationError as err:
        raise _explain(path, err, documents[0], "items", "workload") from None
