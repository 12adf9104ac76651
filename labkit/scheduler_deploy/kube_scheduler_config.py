"""A strict check of the KubeSchedulerConfiguration deploy-scheduler renders for kube-scheduler in extender
mode (and the benchmark for a kube-scheduler binary), against kube-scheduler's v1 configuration API
(k8s.io/kube-scheduler/config/v1 types.go, with component-base's LeaderElectionConfiguration and
ClientConnectionConfiguration; the rules of pkg/scheduler/apis/config/validation).

Only the fields we render are known here, each with the JSON type kube-scheduler decodes it into; any other
field is refused too, so a template change that adds one must add it here with its upstream type. kube-scheduler
decodes its file strictly (an unknown or mistyped field stops it at start-up), which is the failure this
catches before anything is applied. It is our own model of those fields, not a copy of the Go types.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.scheduler_deploy import DeployError
from scheduler.config import parse_duration
from scheduler.validation import field_problems

API_VERSION = "kubescheduler.config.k8s.io/v1"


def _go_duration(value: str) -> str:
    """metav1.Duration: a string time.ParseDuration reads ("5s", "1m30s")."""
    parse_duration(value)
    return value


GoDuration = Annotated[str, AfterValidator(_go_duration)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _V1(BaseModel):
    # strict: a string where kube-scheduler wants a bool or an integer is refused, as its decoder does.
    model_config = ConfigDict(extra="forbid", strict=True)


class V1LeaderElection(_V1):
    """componentbaseconfigv1alpha1.LeaderElectionConfiguration (the fields we render)."""

    leaderElect: bool
    resourceLock: Literal["leases"]  # the only lock kube-scheduler still offers
    resourceName: NonEmpty
    resourceNamespace: NonEmpty


class V1ClientConnection(_V1):
    """componentbaseconfigv1alpha1.ClientConnectionConfiguration (the fields the benchmark renders)."""

    kubeconfig: str
    qps: float  # float32
    burst: int  # int32


class V1Profile(_V1):
    """KubeSchedulerProfile: the profile serving one schedulerName, with kube-scheduler's default plugins."""

    schedulerName: NonEmpty


class V1Extender(_V1):
    """Extender: how kube-scheduler calls one extender."""

    urlPrefix: Annotated[str, Field(pattern=r"^https?://[^/\s]+")]
    filterVerb: NonEmpty
    prioritizeVerb: NonEmpty
    weight: int  # int64
    httpTimeout: GoDuration
    nodeCacheCapable: bool
    ignorable: bool

    @model_validator(mode="after")
    def _positive_weight(self) -> V1Extender:
        # validation.go: an extender with a prioritize verb "must have a positive weight applied to it"
        if self.prioritizeVerb and self.weight <= 0:
            raise ValueError(f"weight: {self.weight} must be positive for an extender with a prioritizeVerb")
        return self


class V1Configuration(_V1):
    apiVersion: Literal[API_VERSION]  # type: ignore[valid-type]
    kind: Literal["KubeSchedulerConfiguration"]
    leaderElection: V1LeaderElection
    clientConnection: V1ClientConnection | None = None
    profiles: Annotated[list[V1Profile], Field(min_length=1)]
    extenders: list[V1Extender] = []

    @model_validator(mode="after")
    def _unique_scheduler_names(self) -> V1Configuration:
        names = [p.schedulerName for p in self.profiles]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"profiles[{i}].schedulerName: {name!r} is served by another profile already")
        return self


def check_kube_scheduler_config(data: Any) -> None:
    """Raise DeployError naming every field kube-scheduler would refuse."""
    if not isinstance(data, dict):
        raise DeployError("the KubeSchedulerConfiguration is not a mapping of fields")
    try:
        V1Configuration.model_validate(data)
    except ValidationError as err:
        lines = "\n".join(f"  - {p}" for p in field_problems(err))
        raise DeployError(f"the rendered KubeSchedulerConfiguration would not start kube-scheduler:\n{lines}") from None
