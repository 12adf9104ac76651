"""The scheduler's configuration file: a subset of kube-scheduler's KubeSchedulerConfiguration
(apiVersion kubescheduler.config.k8s.io/v1), so a config written for kube-scheduler reads the same here.

Supported: ``profiles[]`` (schedulerName, percentageOfNodesToScore, plugins.{multiPoint,filter,postFilter,score}
with enabled [{name, weight}] / disabled [{name} or "*"], pluginConfig [{name, args}]),
``leaderElection`` (leaderElect, leaseDuration, renewDeadline, retryPeriod, resourceLock: leases,
resourceNamespace, resourceName), ``clientConnection`` (kubeconfig, qps, burst) and
``percentageOfNodesToScore`` (top level or per profile, the profile's winning; unset or 0 means
kube-scheduler's adaptive default, described in scheduler/framework/profile.py). Anything else, or a plugin this scheduler does not have, stops start-up
with a message naming it (kube-scheduler fields we do not implement, such as ``parallelism``, included:
silently ignoring them would mislead).

Differences from kube-scheduler, on purpose:
- ``healthzBindAddress`` / ``metricsBindAddress`` (``host:port``) are extra top-level fields: v1 dropped
  them because kube-scheduler serves those paths on its secure port; this scheduler serves /healthz,
  /readyz and /metrics over plain HTTP there (default 0.0.0.0:10251, kube-scheduler's old insecure port,
  free on every current control plane).
- ``schedulerName`` is required: defaulting to "default-scheduler" would race the cluster's own
  scheduler for every pod.
- ``leaderElection.resourceName`` defaults to the first profile's schedulerName rather than
  "kube-scheduler", so this scheduler never contends for kube-scheduler's Lease.

Plugin names are checked against a plugin registry (``scheduler.framework.Registry``), given to
``parse_config``/``load_config``: the in-tree plugins by default, plus a user's with ``python -m scheduler
--plugins SOURCE`` (``scheduler.framework.load_registry``). This module imports no plugin. Plugin sets follow
kube-scheduler's merge rules: the registry's defaults (``Registry.defaults``) are the multiPoint set; a user's multiPoint entries are appended, or replace a default of the same name in place
(e.g. to change its weight); ``disabled: [{name: "*"}]`` drops the defaults at that point. A plugin named
under ``filter``/``score`` overrides its multiPoint entry there. A config that only enables
NetworkAware under multiPoint therefore runs the defaults plus NetworkAware.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from scheduler.framework import POINTS, Args, Plugin, Registry, implements, in_tree_registry
from scheduler.validation import field_problems

__all__ = [
    "API_VERSION",
    "ConfigError",
    "KubeSchedulerConfiguration",
    "ProfileConfig",
    "ResolvedProfile",
    "load_config",
    "parse_bind_address",
    "parse_config",
    "parse_duration",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_BIND_ADDRESS = "0.0.0.0:10251"

_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the file, each bad field and the fix."""


def parse_duration(value: Any) -> float:
    """A Go duration string ("15s", "1m30s", "500ms") in seconds."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"expected a duration string such as '15s' or '1m30s', got {value!r}")  # noqa: TRY004 (pydantic reports ValueError)
    text = value.strip()
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError(f"{value!r} is not a duration (use a number with ns, us, ms, s, m or h: '15s')")
        total += float(match[1]) * _UNIT_SECONDS[match[2]]
        pos = match.end()
    if not text:
        raise ValueError("empty duration (use e.g. '15s')")
    return total


def parse_bind_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[::]:port`` for IPv6) -> (host, port); raises ValueError naming the value."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port (e.g. 0.0.0.0:10251)")
    return host.strip("[]") or "0.0.0.0", int(port)


def _bind_address(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected host:port, got {value!r}")  # noqa: TRY004 (pydantic reports ValueError)
    parse_bind_address(value)
    return value


Duration = Annotated[float, BeforeValidator(parse_duration)]
BindAddress = Annotated[str, BeforeValidator(_bind_address)]


class _ConfigSection(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PluginRef(_ConfigSection):
    name: str = Field(min_length=1)
    weight: int = Field(0, ge=0, le=1_000_000)  # 0: the plugin's default weight

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class PluginSet(_ConfigSection):
    enabled: list[PluginRef] = []
    disabled: list[PluginRef] = []


class Plugins(_ConfigSection):
    """The plugins per extension point (``scheduler.framework.POINTS``); preFilter and preScore go with filter
    and score here: a filter's PreFilter runs when its filter is enabled, a score's PreScore likewise."""

    multiPoint: PluginSet = PluginSet()
    preEnqueue: PluginSet = PluginSet()
    queueSort: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    postFilter: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    preBind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    postBind: PluginSet = PluginSet()


class PluginConfig(_ConfigSection):
    name: str
    args: dict[str, Any] = {}


@dataclass(frozen=True, kw_only=True)
class ResolvedProfile:
    """The plugins a profile runs, in order, with their parsed args and score weights."""

    scheduler_name: str
    filters: tuple[tuple[Plugin, Args], ...]
    scores: tuple[tuple[Plugin, Args, int], ...]
    percentage_of_nodes_to_score: int | None
    post_filter: tuple[Plugin, Args] | None = None  # DefaultPreemption when enabled
    # The points outside filter and score, by config key (preEnqueue, queueSort, postFilter, reserve, permit,
    # preBind, bind, postBind), each in the order they run; postFilter without DefaultPreemption.
    points: Mapping[str, tuple[tuple[Plugin, Args], ...]] = field(default_factory=dict)


class ProfileConfig(_ConfigSection):
    schedulerName: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    percentageOfNodesToScore: int | None = Field(None, ge=0, le=100)
    plugins: Plugins = Plugins()
    pluginConfig: list[PluginConfig] = []

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ProfileConfig:
        registry = _registry(info)
        known = f"registered: {registry.known()}; load another with --plugins SOURCE"
        errors = []
        for key in ("multiPoint", *(p.config for p in POINTS)):
            plugin_set: PluginSet = getattr(self.plugins, key)
            for kind in ("enabled", "disabled"):
                for i, ref in enumerate(getattr(plugin_set, kind)):
                    where = f"plugins.{key}.{kind}[{i}]"
                    if ref.name == "*" and kind == "disabled":
                        continue
                    plugin = registry.get(ref.name)
                    if plugin is None:
                        errors.append(f"{where}: unknown plugin {ref.name!r} ({known})")
                    elif kind == "enabled" and key != "multiPoint":
                        point = next(p for p in POINTS if p.config == key)
                        if not implements(plugin, point):
                            has = [p.config for p in POINTS if implements(plugin, p)]
                            errors.append(f"{where}: plugin {ref.name} does not extend {point.title} plugin "
                                          f"(it has: {', '.join(has) or 'none'}); enable it there or under "
                                          "multiPoint")
        seen = set()
        for i, item in enumerate(self.pluginConfig):
            if item.name not in registry:
                errors.append(f"pluginConfig[{i}].name: unknown plugin {item.name!r} ({known})")
                continue
            if item.name in seen:
                errors.append(f"pluginConfig[{i}].name: {item.name} is configured twice")
            seen.add(item.name)
            try:
                registry[item.name].args.model_validate(item.args)
            except ValidationError as err:
                errors.extend(field_problems(err, f"pluginConfig[{i}].args"))
        names = [ref.name for ref in self.plugins.multiPoint.enabled]
        for name in sorted({n for n in names if names.count(n) > 1}):
            errors.append(f"plugins.multiPoint.enabled: {name} is listed twice")
        if errors:
            raise ValueError("\n".join(errors))
        return self

    def point_problems(self, registry: Registry) -> list[str]:
        """kube-scheduler's rules on how many plugins a point takes (NewFramework): one QueueSort, at least
        one Bind. Checked when the scheduler runs standalone: an extender neither sorts a queue nor binds."""
        resolved = self.resolve(registry=registry)
        errors = []
        sorts = [p.name for p, _ in resolved.points["queueSort"]]
        if len(sorts) != 1:
            fix = ("enable one (PrioritySort is the default)" if not sorts else
                   "disable the others, e.g. queueSort.disabled: [{name: PrioritySort}]")
            errors.append(f"plugins.queueSort: one queue sort plugin required for profile {self.schedulerName}, "
                          f"found {len(sorts)} ({', '.join(sorts) or 'none'}): {fix}")
        if not resolved.points["bind"]:
            errors.append(f"plugins.bind: at least one bind plugin is needed for profile {self.schedulerName} "
                          "(DefaultBinder binds through the API)")
        return errors

    def args_for(self, name: str, registry: Registry) -> Args:
        for item in self.pluginConfig:
            if item.name == name:
                return registry[name].args.model_validate(item.args)
        return registry[name].default_args()

    def resolve(self, global_percentage: int | None = None, registry: Registry | None = None) -> ResolvedProfile:
        """The plugins this profile runs at filter and score, after kube-scheduler's merge rules, taken from
        ``registry`` (default: the in-tree plugins), which must hold every plugin the profile names."""
        registry = registry if registry is not None else in_tree_registry()
        default_multi = [PluginRef(name=name, weight=weight) for name, weight in registry.defaults]
        multi = _merge(default_multi, self.plugins.multiPoint)
        at = {point.config: _expand(registry, multi, getattr(self.plugins, point.config),
                                    lambda p, point=point: implements(p, point)) for point in POINTS}
        filters, scores = at["filter"], at["score"]
        # DefaultPreemption is the framework's (a descriptor flag); the other PostFilters are plugin instances.
        post_filters = [r for r in at["postFilter"] if registry[r.name].post_filter][:1]
        args = {name: self.args_for(name, registry) for name in {r.name for refs in at.values() for r in refs}}
        points = {key: tuple((registry[r.name], args[r.name]) for r in refs if not registry[r.name].post_filter)
                  for key, refs in at.items() if key not in ("filter", "score")}
        return ResolvedProfile(
            scheduler_name=self.schedulerName,
            filters=tuple((registry[r.name], args[r.name]) for r in filters),
            scores=tuple(
                (registry[r.name], args[r.name], r.weight or 1)  # 0 (unset) means 1, as in kube-scheduler
                for r in scores
            ),
            percentage_of_nodes_to_score=(
                self.percentageOfNodesToScore if self.percentageOfNodesToScore is not None else global_percentage
            ),
            post_filter=next(((registry[r.name], args[r.name]) for r in post_filters), None),
            points=points,
        )


def _merge(defaults: list[PluginRef], custom: PluginSet) -> list[PluginRef]:
    """kube-scheduler's mergePluginSet: defaults minus disabled, re-configured in place, then additions."""
    disabled = {r.name for r in custom.disabled}
    by_name = {r.name: r for r in custom.enabled}
    result: list[PluginRef] = []
    replaced = set()
    if "*" not in disabled:
        for ref in defaults:
            if ref.name in disabled:
                continue
            if ref.name in by_name:
                ref = by_name[ref.name]
                replaced.add(ref.name)
            result.append(ref)
    result.extend(r for r in custom.enabled if r.name not in replaced)
    return result


def _registry(info: ValidationInfo) -> Registry:
    """The registry a config is validated against: parse_config's, else the in-tree plugins."""
    registry = info.context.get("registry") if info.context else None
    return registry if registry is not None else in_tree_registry()


def _expand(registry: Registry, multi: list[PluginRef], point: PluginSet, implements: Any) -> list[PluginRef]:
    """Plugins at one extension point: those named there first (overrides keep their order), then
    multiPoint plugins implementing it and not disabled there (kube-scheduler's expandMultiPointPlugins)."""
    disabled = {r.name for r in point.disabled}
    specific = {r.name: r for r in point.enabled}
    overrides, from_multi = [], []
    if "*" not in disabled:
        for ref in multi:
            if not implements(registry[ref.name]) or ref.name in disabled:
                continue
            if ref.name in specific:
                overrides.append(specific[ref.name])
            else:
                from_multi.append(ref)
    override_names = {r.name for r in overrides}
    rest = [r for r in point.enabled if r.name not in override_names]
    return overrides + from_multi + rest


class LeaderElection(_ConfigSection):
    leaderElect: bool = True
    leaseDuration: Duration = 15.0
    renewDeadline: Duration = 10.0
    retryPeriod: Duration = 2.0
    resourceLock: Literal["leases"] = "leases"
    resourceNamespace: str = Field("kube-system", min_length=1)
    resourceName: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _check(self) -> LeaderElection:
        # The same rules as client-go's leader election (JitterFactor 1.2).
        if self.leaseDuration <= self.renewDeadline:
            raise ValueError("leaseDuration must be greater than renewDeadline (defaults: 15s > 10s)")
        if self.renewDeadline <= 1.2 * self.retryPeriod:
            raise ValueError("renewDeadline must be greater than 1.2 x retryPeriod (defaults: 10s, 2s)")
        if self.retryPeriod <= 0:
            raise ValueError("retryPeriod must be greater than zero")
        return self


class ClientConnection(_ConfigSection):
    kubeconfig: str = ""
    qps: float = Field(50.0, ge=0)  # kube-scheduler's defaults; 0 disables the limit
    burst: int = Field(100, ge=1)


class KubeSchedulerConfiguration(_ConfigSection):
    apiVersion: Literal["kubescheduler.config.k8s.io/v1"]
    kind: Literal["KubeSchedulerConfiguration"]
    profiles: list[ProfileConfig] = Field(min_length=1)
    leaderElection: LeaderElection = LeaderElection()
    clientConnection: ClientConnection = ClientConnection()
    percentageOfNodesToScore: int | None = Field(None, ge=0, le=100)
    healthzBindAddress: BindAddress = DEFAULT_BIND_ADDRESS
    metricsBindAddress: BindAddress = DEFAULT_BIND_ADDRESS
    _registry: Registry | None = PrivateAttr(None)  # the one it was validated against

    @model_validator(mode="after")
    def _check(self) -> KubeSchedulerConfiguration:
        names = [p.schedulerName for p in self.profiles]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"profiles: schedulerName {', '.join(dupes)} used by more than one profile")
        return self

    def point_problems(self) -> list[str]:
        """What stops these profiles from running standalone (``ProfileConfig.point_problems``), and kube-scheduler's
        rule that one queue serves every profile: the same QueueSort in each."""
        errors = [f"profiles[{i}].{problem}" for i, p in enumerate(self.profiles)
                  for problem in p.point_problems(self.registry)]
        sorts = {tuple(p.name for p, _ in r.points["queueSort"]) for r in self.resolved_profiles()}
        if not errors and len(sorts) > 1:
            errors.append("profiles: queueSort must be the same for all profiles (found "
                          + "; ".join(", ".join(s) for s in sorted(sorts)) + ")")
        return errors

    @property
    def lease_name(self) -> str:
        return self.leaderElection.resourceName or self.profiles[0].schedulerName

    @property
    def registry(self) -> Registry:
        """The plugin registry this configuration was validated against."""
        return self._registry if self._registry is not None else in_tree_registry()

    def resolved_profiles(self, registry: Registry | None = None) -> list[ResolvedProfile]:
        """Each profile's plugins, from ``registry`` (default: the one the configuration was parsed with)."""
        registry = registry if registry is not None else self.registry
        return [p.resolve(self.percentageOfNodesToScore, registry) for p in self.profiles]


def parse_config(data: Any, source: str = "config", registry: Registry | None = None) -> KubeSchedulerConfiguration:
    """Validate a parsed YAML document against ``registry`` (default: the in-tree plugins only); raises
    ConfigError listing every problem with its field path (an unknown plugin's lists the registered ones)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a KubeSchedulerConfiguration mapping, got {type(data).__name__}")
    registry = registry if registry is not None else in_tree_registry()
    try:
        config = KubeSchedulerConfiguration.model_validate(data, context={"registry": registry})
    except ValidationError as err:
        lines = field_problems(err)
        raise ConfigError(f"{source}: invalid scheduler configuration:\n  " + "\n  ".join(lines)) from None
    config._registry = registry
    return config


def load_config(path: str | Path, registry: Registry | None = None) -> KubeSchedulerConfiguration:
    """Read and validate a configuration file against ``registry`` (default: the in-tree plugins only)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the scheduler configuration: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    return parse_config(data, str(path), registry)
