"""One placement run's workspace on the cluster: its namespace, its test pods (rendered from
templates/placement/), reading them back with their events, bounded waits, and the high-speed node label.
The probe (probe.py) and the scenario checks (checks.py) work through it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import yaml

from labdef import versions
from labdef.lab import Lab
from labdef.render import render
from labkit.console import Echo
from labkit.kube import Kube, KubeError, event_time, pod_path
from labkit.placement.changes import Changes
from labkit.placement.explain import ExplainError, Explanation, SchedulerConfig, explain_in_cluster
from labkit.placement.judge import MISS, Event, PodState, Verdict
from labkit.placement.options import PlacementOptions
from labkit.placement.scenarios import PodDefaults, Pods, Scenario, ScenarioSet, load_scenarios

MANAGED_BY = {"app.kubernetes.io/managed-by": "kubelab-placement"}
SCENARIO_LABEL = "kubelab.io/placement-scenario"
HOSTNAME_KEY = "kubernetes.io/hostname"
NAMESPACE_PREFIX = "placement-"


def pod_image(defaults: PodDefaults, lab: Lab) -> str:
    """The scenarios' image, else the sandbox image the lab's nodes already hold (no pull, no registry): the
    one kubeadm expects for the lab's minor, or the newest known for a minor newer than labdef.versions."""
    minor = lab.kubernetes.minor_number
    return defaults.image or versions.pause_image(minor) or versions.pause_image(max(versions.KUBERNETES))


def render_pod(defaults: PodDefaults, lab: Lab, name: str, namespace: str, scenario: str,
               annotations: dict[str, str], scheduler_name: str, pods: Pods | None = None, *,
               priority_class: str | None = None, cpu: str | None = None) -> dict[str, Any]:
    """One test pod from templates/placement/pod.yaml.j2, with the constraints `pods` asks for (``cpu``
    overrides the scenarios' default)."""
    constraints = pod_constraints(pods, scenario) if pods is not None else {}
    text = render("placement/pod.yaml.j2", name=name, namespace=namespace,
                  labels={**MANAGED_BY, SCENARIO_LABEL: scenario}, annotations=annotations,
                  scheduler_name=scheduler_name, image=pod_image(defaults, lab), cpu=cpu or defaults.cpu,
                  memory=defaults.memory, affinity=constraints.get("affinity"),
                  topology_spread_constraints=constraints.get("topologySpreadConstraints"),
                  priority_class_name=priority_class)
    return yaml.safe_load(text)


def pod_constraints(pods: Pods, scenario: str) -> dict[str, Any]:
    """The scenario's constraints among its own pods (selected by their scenario label), per node."""
    own = {"matchLabels": {SCENARIO_LABEL: scenario}}
    constraints: dict[str, Any] = {}
    if pods.anti_affinity == "required":
        constraints["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": own, "topologyKey": HOSTNAME_KEY}]}}
    if pods.topology_spread is not None:
        # Honor: a node whose taints the pod does not tolerate (the control plane) is no domain; with the
        # default Ignore it would count as a domain holding 0 pods, and hold every other node at maxSkew.
        constraints["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": HOSTNAME_KEY, "whenUnsatisfiable": pods.topology_spread,
            "labelSelector": own, "nodeTaintsPolicy": "Honor"}]
    return constraints


def render_namespace() -> dict[str, Any]:
    return yaml.safe_load(render("placement/namespace.yaml.j2", prefix=NAMESPACE_PREFIX, labels=MANAGED_BY))


EVENT_GRACE_SECONDS = 5.0  # how long a bound pod's Scheduled event may trail its binding


class Session:
    """The run's namespace, pods and label changes on one cluster, with the options' waits."""

    def __init__(self, lab: Lab, kube: Kube, config: SchedulerConfig, options: PlacementOptions, echo: Echo) -> None:
        self.lab = lab
        self.kube = kube
        self.config = config
        self.options = options
        self.echo = echo
        self.changes = Changes(kube)
        self.namespace = ""
        self.scenarios: ScenarioSet = load_scenarios(options.scenarios_file)
        s = lab.scheduler.network_aware
        self.label_key, self.label_value, self.annotation_key = s.label_key, s.label_value, s.annotation_key

    @property
    def label(self) -> str:
        return f"{self.label_key}={self.label_value}"

    def wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Poll until predicate() is truthy or the timeout passes; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(self.options.poll)

    def pod_manifest(self, name: str, scenario: str, *, high_speed: bool, scheduler_name: str,
                     pods: Pods | None = None, **overrides: Any) -> dict[str, Any]:
        annotations = {self.annotation_key: self.label_value} if high_speed else {}
        return render_pod(self.scenarios.pod, self.lab, name, self.namespace, scenario, annotations, scheduler_name,
                          pods, **overrides)

    def scenario_pod(self, scenario: Scenario, name: str, **overrides: Any) -> dict[str, Any]:
        """A pod as the scenario's `pods` asks: the high-speed annotation, the lab's or an unserved scheduler;
        ``overrides``: render_pod's priority_class and cpu."""
        unserved = f"nobody-{self.namespace}"  # unique per run, so no scheduler can be serving it
        return self.pod_manifest(name, scenario.id, high_speed=scenario.pods.network is not None,
                                 scheduler_name=unserved if scenario.pods.scheduler == "unserved"
                                 else self.lab.scheduler.name, pods=scenario.pods, **overrides)

    def create_pods(self, scenario: Scenario, count: int, prefix: str = "", **overrides: Any) -> list[str]:
        names = [f"{scenario.id}-{prefix}{i}" for i in range(1, count + 1)]
        for name in names:
            self.kube.create(pod_path(self.namespace), self.scenario_pod(scenario, name, **overrides))
        return names

    def read(self, name: str, with_events: bool = True) -> PodState:
        obj = self.kube.pod(self.namespace, name)
        if obj is None:
            return PodState(name, None, "Deleted")
        events = self.kube.pod_events(self.namespace, name, obj["metadata"].get("uid", "")) if with_events else []
        return PodState.from_api(obj, events)

    def read_all(self, names: list[str], with_events: bool = True) -> list[PodState]:
        """Several pods with one list call (and one for their events), in the order of `names`."""
        pods = {p["metadata"]["name"]: p for p in self.kube.items(pod_path(self.namespace))}
        events: dict[str, list[dict[str, Any]]] = {}
        if with_events:
            for event in sorted(self.kube.items(f"/api/v1/namespaces/{self.namespace}/events"), key=event_time):
                events.setdefault((event.get("involvedObject") or {}).get("name", ""), []).append(event)
        return [PodState.from_api(pods[n], events.get(n, [])) if n in pods
                else PodState(n, None, "Deleted", events=tuple(Event.from_api(e) for e in events.get(n, [])))
                for n in names]

    def wait_bound(self, names: list[str]) -> list[PodState]:
        def all_bound() -> list[PodState] | None:
            states = self.read_all(names, with_events=False)
            return states if all(s.node for s in states) else None

        self.wait(all_bound, self.options.timeout)
        # A scheduler records its Scheduled event after the binding, asynchronously (kube-scheduler too):
        # give the events a moment to arrive, so a miss shows them.
        latest: list[PodState] = []

        def events_seen() -> bool:
            latest[:] = self.read_all(names)
            return all(s.events for s in latest if s.node)

        self.wait(events_seen, min(EVENT_GRACE_SECONDS, self.options.timeout))
        return latest

    def wait_decided(self, names: list[str]) -> list[PodState]:
        """Wait until each pod is bound or reported unschedulable (a FailedScheduling event); their states."""
        def decided() -> list[PodState] | None:
            states = self.read_all(names)
            return states if all(s.node or s.events_with("FailedScheduling") for s in states) else None

        return self.wait(decided, self.options.timeout) or self.read_all(names)

    def wait_running(self, states: list[PodState]) -> Verdict | None:
        """--wait-running: every bound pod must reach Running; None when they all do."""
        names = [s.name for s in states if s.node]

        def running() -> bool:
            return all(s.phase == "Running" for s in self.read_all(names, with_events=False))

        if self.wait(running, self.options.timeout):
            return None
        late = [s for s in self.read_all(names) if s.phase != "Running"]
        detail = "; ".join(f"{s.name} on {s.node} is {s.phase or 'unknown'}"
                           + (f" ({s.events[-1]})" if s.events else "") for s in late[:3])
        return Verdict(MISS, f"bound but not Running within {self.options.timeout:.0f} s: {detail}")

    def explain(self, name: str) -> Explanation | None:
        try:
            return explain_in_cluster(self.kube, self.namespace, name, self.config, self.lab.scheduler.name)
        except (KubeError, ExplainError) as err:
            return Explanation(f"{self.namespace}/{name}", self.config.source, [], f"cannot explain: {err}")

    # ---------------------------------------------------------------------------------------- labels

    def nodes_by_name(self) -> dict[str, dict[str, Any]]:
        return {n["metadata"]["name"]: n for n in self.kube.nodes()}

    def set_high_speed_label(self, wanted: str) -> None:
        """The scenario's high_speed_label: applied, removed, or untouched."""
        if wanted == "applied":
            self.apply_high_speed_label()
        elif wanted == "removed":
            self.remove_high_speed_label()

    def apply_high_speed_label(self) -> None:
        nodes = self.nodes_by_name()
        for name in self.lab.placement.high_speed_nodes:
            labels = nodes[name]["metadata"].get("labels") or {}
            self.changes.set_label(name, self.label_key, self.label_value, labels.get(self.label_key))

    def remove_high_speed_label(self) -> None:
        removed = False
        for name, node in self.nodes_by_name().items():
            labels = node["metadata"].get("labels") or {}
            if labels.get(self.label_key) == self.label_value:
                self.changes.set_label(name, self.label_key, None, labels[self.label_key])
                removed = True
        if removed:
            # The scheduler sees node and pod changes on separate watches: give the node change a head
            # start, or a pod created at once may be placed by a cache that still has the label.
            time.sleep(self.options.label_settle_seconds)

    def create_namespace(self) -> str:
        created = self.kube.create("/api/v1/namespaces", render_namespace())
        self.namespace = created["metadata"]["name"]
        self.changes.namespace = self.namespace
        self.ensure_default_service_account()
        return self.namespace

    def ensure_default_service_account(self) -> None:
        """Pod admission refuses pods until the namespace's `default` ServiceAccount exists; the
        controller-manager creates it a moment after the namespace (never, on an API server without one),
        so create it ourselves. AlreadyExists means the controller was first; NotFound, that this API
        server does not serve ServiceAccounts (and so does not require them)."""
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        try:
            self.kube.create(f"/api/v1/namespaces/{self.namespace}/serviceaccounts", body)
        except KubeError as err:
            if err.status not in (404, 409):
                raise
