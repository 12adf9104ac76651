"""One placement run's workspace on the cluster: its namespace, its test pods (rendered from
templates/placement/ with the scenario's patch), reading them back with their events, bounded waits, the
scenario's node changes and PriorityClasses. The probe (probe.py) and the scenario check (checks.py) work
through it."""

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
from labkit.placement.scenarios import NodeChange, PodDefaults, Scenario

MANAGED_BY = {"app.kubernetes.io/managed-by": "kubelab-placement"}
SCENARIO_LABEL = "kubelab.io/placement-scenario"
NAMESPACE_PREFIX = "placement-"


def pod_image(defaults: PodDefaults, lab: Lab) -> str:
    """The scenarios' image, else the sandbox image the lab's nodes already hold (no pull, no registry): the
    one kubeadm expects for the lab's minor, or the newest known for a minor newer than labdef.versions."""
    minor = lab.kubernetes.minor_number
    return defaults.image or versions.pause_image(minor) or versions.pause_image(max(versions.KUBERNETES))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def render_pod(defaults: PodDefaults, lab: Lab, name: str, namespace: str, scenario: str, scheduler_name: str,
               patch: dict[str, Any] | None = None, *, priority_class: str | None = None,
               cpu: str | None = None) -> dict[str, Any]:
    """One test pod: templates/placement/pod.yaml.j2 (``cpu`` overrides the scenarios' default) with the
    scenario's merge patch on top; the run's labels stay whatever the patch says."""
    labels = {**MANAGED_BY, SCENARIO_LABEL: scenario}
    text = render("placement/pod.yaml.j2", name=name, namespace=namespace, labels=labels,
                  scheduler_name=scheduler_name, image=pod_image(defaults, lab), cpu=cpu or defaults.cpu,
                  memory=defaults.memory, priority_class_name=priority_class)
    pod = merge_patch(yaml.safe_load(text), patch or {})
    pod["metadata"]["labels"] = {**(pod["metadata"].get("labels") or {}), **labels}
    return pod


def render_namespace() -> dict[str, Any]:
    return yaml.safe_load(render("placement/namespace.yaml.j2", prefix=NAMESPACE_PREFIX, labels=MANAGED_BY))


def served_kind(kube: Kube, api_version: str, kind: str) -> tuple[str, str, bool] | None:
    """(API prefix, plural, namespaced) of a kind the server serves, from its discovery document of that
    group/version (https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api); None if not."""
    prefix = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    for resource in (kube.get_or_none(prefix) or {}).get("resources") or []:
        if resource.get("kind") == kind and "/" not in resource.get("name", ""):
            return prefix, resource["name"], bool(resource.get("namespaced"))
    return None


EVENT_GRACE_SECONDS = 5.0  # how long a bound pod's Scheduled event may trail its binding


class Session:
    """The run's namespace, pods and node changes on one cluster, with the options' waits."""

    def __init__(self, lab: Lab, kube: Kube, config: SchedulerConfig, options: PlacementOptions, echo: Echo,
                 pod_defaults: PodDefaults | None = None) -> None:
        self.lab = lab
        self.kube = kube
        self.config = config
        self.options = options
        self.echo = echo
        self.pod_defaults = pod_defaults or PodDefaults()
        self.changes = Changes(kube)
        self.namespace = ""
        self.priority_classes: dict[int, str] = {}  # value -> the run's PriorityClass

    def wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Poll until predicate() is truthy or the timeout passes; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(self.options.poll)

    def pod_manifest(self, name: str, scenario: str, *, scheduler_name: str, patch: dict[str, Any] | None = None,
                     **overrides: Any) -> dict[str, Any]:
        return render_pod(self.pod_defaults, self.lab, name, self.namespace, scenario, scheduler_name, patch,
                          **overrides)

    def scenario_pod(self, scenario: Scenario, name: str, **overrides: Any) -> dict[str, Any]:
        """A pod as the scenario's `pods` asks: its patch, the lab's or an unserved scheduler, its priority;
        ``overrides``: render_pod's priority_class and cpu."""
        unserved = f"nobody-{self.namespace}"  # unique per run, so no scheduler can be serving it
        if scenario.pods.priority is not None:
            overrides.setdefault("priority_class", self.priority_class(scenario.pods.priority))
        return self.pod_manifest(name, scenario.id, scheduler_name=unserved if scenario.pods.scheduler == "unserved"
                                 else self.lab.scheduler.name, patch=scenario.pods.patch, **overrides)

    def create_pods(self, scenario: Scenario, count: int, prefix: str = "", **overrides: Any) -> list[str]:
        """The scenario's pods <id>-1..N (fill pods: with a prefix); without a prefix, each labelled with its
        set of pods.split."""
        names = [f"{scenario.id}-{prefix}{i}" for i in range(1, count + 1)]
        for i, name in enumerate(names, 1):
            pod = self.scenario_pod(scenario, name, **overrides)
            value = scenario.pods.set_of(i) if not prefix else None
            if value is not None and scenario.pods.split is not None:
                pod["metadata"]["labels"][scenario.pods.split.label] = value
            self.kube.create(pod_path(self.namespace), pod)
        return names

    def pod_sets(self, scenario: Scenario, names: list[str]) -> dict[str, list[str]]:
        """The scenario's pods by set: pods.split's values in order, else one set named for the scenario."""
        if scenario.pods.split is None:
            return {scenario.id: list(names)}
        sets: dict[str, list[str]] = {v: [] for v in scenario.pods.split.values}
        for i, name in enumerate(names, 1):
            sets[scenario.pods.set_of(i) or ""].append(name)
        return sets

    def create_objects(self, scenario: Scenario) -> None:
        """The scenario's objects, namespaced ones in the run's namespace (deleted by end_scenario)."""
        for obj in scenario.objects:
            collection, namespaced = self.object_collection(obj)
            meta = {**obj["metadata"], **({"namespace": self.namespace} if namespaced else {})}
            described = f"{obj['kind']} {meta['name']}"
            self.changes.create_object(collection, {**obj, "metadata": meta}, described)

    def object_collection(self, obj: dict[str, Any]) -> tuple[str, bool]:
        """The API collection path of an object's kind in the run's namespace, and whether it is namespaced."""
        found = served_kind(self.kube, obj["apiVersion"], obj["kind"])
        if found is None:
            raise KubeError(f"{obj['apiVersion']} serves no kind {obj['kind']}", 404, "NotFound")
        prefix, plural, namespaced = found
        scope = f"/namespaces/{self.namespace}" if namespaced else ""
        return f"{prefix}{scope}/{plural}", namespaced

    def priority_class(self, value: int) -> str:
        """The run's PriorityClass of this value, created on first use (deleted at the end of the run)."""
        if value not in self.priority_classes:
            name = f"{self.namespace}-priority-{value}".replace("--", "-minus-")
            self.changes.create_priority_class(name, value)
            self.priority_classes[value] = name
        return self.priority_classes[value]

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
        """Wait until each pod is bound or reported unschedulable (a FailedScheduling event and the condition
        PodScheduled=False, which a scheduler may write a moment apart); their states."""
        def reported(state: PodState) -> bool:
            cond = state.scheduled_condition
            return bool(state.events_with("FailedScheduling") and cond and cond.get("status") == "False")

        def decided() -> list[PodState] | None:
            states = self.read_all(names)
            return states if all(s.node or reported(s) for s in states) else None

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

    # ---------------------------------------------------------------------------------------- nodes

    def apply_node_changes(self, changes: list[NodeChange]) -> None:
        """The scenario's labels, annotations, taints and cordons on its selected nodes (restored by
        end_scenario)."""
        if not changes:
            return
        nodes = {n["metadata"]["name"]: n for n in self.kube.nodes()}
        changed = False
        for change in changes:
            for name in change.select.pick(list(nodes.values())):
                meta, spec = nodes[name]["metadata"], nodes[name].get("spec") or {}
                for kind, wanted_values in (("labels", change.labels), ("annotations", change.annotations)):
                    current_values = meta.get(kind) or {}
                    for key, value in wanted_values.items():
                        changed |= current_values.get(key) != value
                        self.changes.set_metadata(name, kind, key, value, current_values.get(key))
                if change.taints:
                    current = spec.get("taints") or []
                    wanted = current + [t.as_api() for t in change.taints if t.as_api() not in current]
                    changed |= wanted != current
                    self.changes.set_spec(name, "taints", wanted, spec.get("taints"))
                if change.cordon is not None:
                    changed |= bool(spec.get("unschedulable")) != change.cordon
                    self.changes.set_spec(name, "unschedulable", change.cordon or None, spec.get("unschedulable"))
        if changed:
            # The scheduler sees node and pod changes on separate watches: give the node change a head
            # start, or a pod created at once may be placed by a cache that does not have it yet.
            time.sleep(self.options.label_settle_seconds)

    def end_scenario(self) -> list[str]:
        """Between scenarios: delete the scenario's pods first (a Pending one would be bound once the nodes
        are restored), then its objects, then restore the nodes it changed."""
        self.changes.delete_pods()
        deleted = self.changes.delete_objects()
        return [*([deleted] if deleted else []), *self.changes.restore_nodes()]

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
