"""What the scheduler keeps of a pod (``PodInfo``), parsed once per watch event under a parse policy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.affinity import NodeSelector, PreferredTerm, parse_node_affinity
from scheduler.model.parsing import STRICT, ParsePolicy, PodSpecError, Unsupported, as_list, as_str_map
from scheduler.model.pod_affinity import PodAffinity, parse_pod_affinity
from scheduler.model.raw import EMPTY, POD_NOT_KEPT, ReadOnlyView
from scheduler.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    Resources,
    container_requests,
    non_zero_requests,
    pod_level_requests,
    pod_requests,
)
from scheduler.model.taints import Toleration, parse_tolerations
from scheduler.model.topology_spread import SpreadConstraint, parse_topology_spread
from scheduler.model.volumes import PodClaim, parse_volumes

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"  # spec.preemptionPolicy's default
PREEMPT_NEVER = "Never"
_NONE: frozenset[str] = frozenset()
DISRUPTION_TARGET = "DisruptionTarget"  # the pod condition kube-scheduler writes on a victim
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"  # that condition's reason


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One entry of ``spec.resourceClaims`` (DRA): the name containers use, and the ResourceClaim it names
    (``resourceClaimName``) or the ResourceClaimTemplate a claim is made from (``resourceClaimTemplateName``)."""

    name: str
    claim_name: str = ""
    template_name: str = ""


@dataclass(slots=True, eq=False)
class PodInfo:
    """What the scheduler needs of a pod. ``requests`` is the effective request with ``pods=1``, pod-level
    resources (``spec.resources``) counted as kube-scheduler 1.36 counts them: they stand for the
    containers' cpu and memory; ``non_zero_milli_cpu``/``non_zero_memory`` are the same with the scheduler's
    defaults for containers that request nothing (used by scoring only)."""

    uid: str
    namespace: str
    name: str
    resource_version: str = ""
    scheduler_name: str = "default-scheduler"
    node_name: str | None = None
    phase: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requests: Resources = field(default_factory=lambda: Resources(pods=1))
    non_zero_milli_cpu: int = DEFAULT_MILLI_CPU_REQUEST
    non_zero_memory: int = DEFAULT_MEMORY_REQUEST
    # With pod-level resources (spec.resources), the containers' non-zero cpu and memory: what kube-scheduler
    # 1.36's NodeResourcesFit scores the pod with (its scorer skips pod-level resources, unlike its filter
    # and BalancedAllocation). None: the same as non_zero_milli_cpu and non_zero_memory.
    container_non_zero: tuple[int, int] | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple[PreferredTerm, ...] = ()
    pod_affinity: PodAffinity | None = None  # inter-pod affinity and anti-affinity (None: states none)
    tolerations: tuple[Toleration, ...] = ()
    host_ports: frozenset[tuple[str, str, int]] = frozenset()
    images: tuple[str, ...] = ()  # one per init container and container, as written ("" when missing)
    topology_spread: tuple[SpreadConstraint, ...] = ()
    priority: int = 0
    preemption_policy: str = PREEMPT_LOWER_PRIORITY  # spec.preemptionPolicy
    nominated_node_name: str = ""  # status.nominatedNodeName: where preemption made room for it
    creation_timestamp: str = ""
    start_time: str = ""  # status.startTime (RFC 3339, UTC): preemption spares the longest-running first
    deletion_timestamp: str | None = None
    claims: tuple[PodClaim, ...] = ()  # the PersistentVolumeClaims its volumes use
    resource_claims: tuple[PodResourceClaim, ...] = ()  # spec.resourceClaims (DRA)
    # status.resourceClaimStatuses: (entry name, the claim made from its template, "" when none was needed)
    resource_claim_statuses: tuple[tuple[str, str], ...] = ()
    unsupported: tuple[Unsupported, ...] = ()  # fields kube-scheduler honours and this scheduler cannot
    # Being deleted after a scheduler preempted it (the DisruptionTarget condition it wrote, reason
    # PreemptionByScheduler): a preemptor nominated to its node waits for it instead of preempting more.
    terminating_by_preemption: bool = False
    spec_error: PodSpecError | None = None  # set by unreadable(): why the spec cannot be read
    # The Pod object as read (kept, not copied: nothing changes a watch event's dict), for ``raw``.
    _raw: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def raw(self) -> Mapping[str, Any]:
        """The Pod object as read, read-only (``scheduler.model.raw``): any field the model does not parse,
        e.g. ``pod.raw["metadata"].get("annotations", {}).get("example.com/tier")``. Empty for a PodInfo
        built without one; for a pod counted on a node, reading it raises LookupError unless an enabled
        plugin declares ``reads_counted_pods_raw`` (``raw.POD_NOT_KEPT``)."""
        return EMPTY if self._raw is None else ReadOnlyView(self._raw)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any], policy: ParsePolicy = STRICT, keep_object: bool = True) -> PodInfo:
        """Build from a core/v1 Pod dict. ``STRICT`` raises PodSpecError naming the bad field; ``LENIENT``
        (pods already bound) skips what does not parse and counts the rest. Without ``keep_object``, ``raw``
        says the object was not kept (``raw.POD_NOT_KEPT``)."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not isinstance(meta, dict) or not isinstance(spec, dict):
            raise PodSpecError("metadata" if not isinstance(meta, dict) else "spec", "expected a map")
        regular: list[Resources] = []
        regular_nz: list[Resources] = []
        init: list[tuple[Resources, bool]] = []
        init_nz: list[tuple[Resources, bool]] = []
        port_sources: list[tuple[Mapping[str, Any], str]] = []
        images: list[str] = []
        for section, i, container in _containers(spec, policy):
            path = f"spec.{section}[{i}]"
            images.append(str(container.get("image") or ""))
            req = container_requests(container, path, policy)
            nz = non_zero_requests(req, container)
            if section == "containers":
                regular.append(req)
                regular_nz.append(nz)
                port_sources.append((container, path))
            else:
                restartable = container.get("restartPolicy") == "Always"
                init.append((req, restartable))
                init_nz.append((nz, restartable))
                if restartable:
                    port_sources.append((container, path))
        overhead = Resources.from_resource_list(spec.get("overhead"), "spec.overhead", policy)
        # spec.resources is rare: a pod without it pays one lookup (this runs for every pod event)
        pod_level, pod_level_names = pod_level_requests(spec, policy) if spec.get("resources") else (None, _NONE)
        requests = pod_requests(regular, init, overhead, pod_level, pod_level_names)
        requests.pods = 1
        non_zero_overhead = Resources(overhead.milli_cpu, overhead.memory)
        non_zero = pod_requests(regular_nz, init_nz, non_zero_overhead, pod_level, pod_level_names & {CPU, MEMORY})
        container_non_zero = None
        if pod_level_names:
            containers = pod_requests(regular_nz, init_nz, non_zero_overhead)
            container_non_zero = (containers.milli_cpu, containers.memory)
        try:
            required, preferred = parse_node_affinity(spec)
        except PodSpecError as err:
            policy.unreadable(err)
            required, preferred = None, ()
        namespace = str(meta.get("namespace") or "default")
        labels = _str_map(meta.get("labels"), "metadata.labels", policy)
        try:
            pod_affinity = parse_pod_affinity(spec, namespace, labels)
        except PodSpecError as err:
            policy.unreadable(err)
            pod_affinity = None
        try:
            topology_spread = parse_topology_spread(spec, labels)
        except PodSpecError as err:
            policy.unreadable(err)
            topology_spread = ()
        priority = spec.get("priority")
        name = str(meta.get("name") or "")
        claims, unsupported = parse_volumes(spec, name, policy)
        status = status if isinstance(status, dict) else {}
        return cls(
            uid=str(meta.get("uid") or ""),
            namespace=namespace,
            name=name,
            resource_version=str(meta.get("resourceVersion") or ""),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=spec.get("nodeName") or None,
            phase=str(status.get("phase") or ""),
            labels=labels,
            annotations=_str_map(meta.get("annotations"), "metadata.annotations", policy),
            requests=requests,
            non_zero_milli_cpu=non_zero.milli_cpu,
            non_zero_memory=non_zero.memory,
            container_non_zero=container_non_zero,
            node_selector=_str_map(spec.get("nodeSelector"), "spec.nodeSelector", policy),
            required_node_affinity=required,
            preferred_node_affinity=preferred,
            pod_affinity=pod_affinity,
            tolerations=parse_tolerations(spec, policy),
            host_ports=_host_ports(port_sources, policy),
            images=tuple(images),
            topology_spread=topology_spread,
            priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
            preemption_policy=str(spec.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY),
            nominated_node_name=str(status.get("nominatedNodeName") or ""),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            start_time=str(status.get("startTime") or ""),
            deletion_timestamp=meta.get("deletionTimestamp") or None,
            claims=claims,
            resource_claims=_resource_claims(spec, policy),
            resource_claim_statuses=tuple(
                (str(entry.get("name") or ""), str(entry.get("resourceClaimName") or ""))
                for entry in status.get("resourceClaimStatuses") or () if isinstance(entry, dict)),
            unsupported=unsupported,
            terminating_by_preemption=bool(meta.get("deletionTimestamp")) and _preempted(status),
            _raw=obj if keep_object else POD_NOT_KEPT,
        )


    @classmethod
    def unreadable(cls, obj: Mapping[str, Any], error: PodSpecError) -> PodInfo:
        """A pod whose spec STRICT parsing refused: its identity and the error, nothing else, so that it is
        queued and reported like any pod, and an update that leaves the error as it was (e.g. our own
        status patch, or a new label) is no change to it."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        return cls(
            uid=str(meta.get("uid") or ""),
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            spec_error=error,
            _raw=obj,
        )


def _resource_claims(spec: Mapping[str, Any], policy: ParsePolicy) -> tuple[PodResourceClaim, ...]:
    found = []
    try:
        entries = as_list(spec.get("resourceClaims"), "spec.resourceClaims")
    except PodSpecError as err:
        policy.unreadable(err)
        return ()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("name"):
            policy.unreadable(PodSpecError(f"spec.resourceClaims[{i}]", f"expected a map with a name, got {entry!r}"))
            continue
        found.append(PodResourceClaim(str(entry["name"]), str(entry.get("resourceClaimName") or ""),
                                      str(entry.get("resourceClaimTemplateName") or "")))
    return tuple(found)


def _preempted(status: Mapping[str, Any]) -> bool:
    """status.conditions carries DisruptionTarget=True with reason PreemptionByScheduler."""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == DISRUPTION_TARGET:
            return condition.get("status") == "True" and condition.get("reason") == PREEMPTION_BY_SCHEDULER
    return False


def _containers(spec: Mapping[str, Any], policy: ParsePolicy) -> Iterable[tuple[str, int, Mapping[str, Any]]]:
    """(section, index, container) for every container and init container that can be read."""
    for section in ("containers", "initContainers"):
        try:
            items = as_list(spec.get(section), f"spec.{section}")
        except PodSpecError as err:
            policy.unreadable(err)
            continue
        for i, container in enumerate(items):
            if not isinstance(container, dict):
                path = f"spec.{section}[{i}]"
                policy.unreadable(PodSpecError(path, f"expected a container map, got {container!r}"))
                continue
            yield section, i, container


def _str_map(value: Any, path: str, policy: ParsePolicy) -> dict[str, str]:
    try:
        return as_str_map(value, path)
    except PodSpecError as err:
        policy.unreadable(err)
        return {}


def _host_ports(containers: Iterable[tuple[Mapping[str, Any], str]], policy: ParsePolicy) -> frozenset:
    ports = set()
    for container, path in containers:
        declared = container.get("ports") or []
        if not isinstance(declared, list):
            policy.unreadable(PodSpecError(f"{path}.ports", f"expected a list, got {declared!r}"))
            continue
        for j, port in enumerate(declared):
            if not isinstance(port, dict):
                continue
            host_port = port.get("hostPort")
            if not host_port:
                continue
            if not isinstance(host_port, int) or isinstance(host_port, bool) or not 0 < host_port < 65536:
                policy.unreadable(
                    PodSpecError(f"{path}.ports[{j}].hostPort", f"must be 1-65535, got {host_port!r}"))
                continue
            ports.add((port.get("protocol") or "TCP", port.get("hostIP") or "0.0.0.0", host_port))
    return frozenset(ports)
