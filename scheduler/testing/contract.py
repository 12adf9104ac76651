"""The contract checks every plugin passes, the bundled ones and a user's alike:

- ``batch-forms``: ``filter_batch`` / ``score_batch`` give exactly what ``filter_node`` / ``score_node``
  give node by node, over generated nodes and pods (``scheduler.testing.generate``), for the default args
  and the variants of each choice field (a Literal, an Enum, a bool);
- ``requeue``: a filter retries on a new node (``requeue_on`` holds NODE_ADDED: a new node may always fit),
  and each of its ``requeue_on_fields`` names a real field of a Pod or a Node (as of Kubernetes 1.36);
- ``args``: the default args build and read back; an unknown field is refused naming it; every field
  refuses a value of the wrong kind naming the field (a field typed Any accepts anything: give it a type);
- ``setup``: the setup class is made with the default args and a ``FakeHandle`` (its watched kinds empty),
  and each of its points, called as the framework calls it on generated pods, returns None or a Status (a
  WAIT with a timeout above 0 s and at most 15 minutes), sort keys of two pods compare, and ``unreserve``
  may run twice (the framework also runs it for Reserve plugins it never reached).

``check_plugin`` returns the problems found (empty: the plugin passes), each naming the plugin and the rule.
"""

from __future__ import annotations

import enum
import itertools
import random
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from scheduler.framework import (
    MAX_PERMIT_WAIT,
    Args,
    ClusterEvent,
    ClusterView,
    Code,
    CycleState,
    ObjectStore,
    Plugin,
    Status,
)
from scheduler.model import NodeInfo, PodInfo, PodSpecError
from scheduler.model.raw import FieldPath
from scheduler.testing.cycles import FakeHandle
from scheduler.testing.generate import Vocabulary, random_node, random_pod

__all__ = ["Problem", "args_problems", "args_variants", "batch_form_problems", "check_plugin",
           "requeue_problems", "setup_problems"]

RULES = ("batch-forms", "requeue", "args", "setup")


@dataclass(frozen=True)
class Problem:
    plugin: str
    rule: str  # one of RULES
    detail: str

    def __str__(self) -> str:
        return f"{self.plugin}: {self.rule}: {self.detail}"


def check_plugin(plugin: Plugin, *, seeds: Iterable[int] = range(10), nodes: int = 30,
                 extra_args: Sequence[Args] = ()) -> list[Problem]:
    """Every rule's problems for ``plugin`` (``extra_args``: args to check the batch forms with besides
    ``args_variants``)."""
    problems = args_problems(plugin) + requeue_problems(plugin)
    if not any(p.rule == "args" for p in problems):  # the batch forms and the setup class run with the args
        problems += batch_form_problems(plugin, seeds=seeds, nodes=nodes, extra_args=extra_args)
        problems += setup_problems(plugin, seeds=seeds)
    return problems


# -- setup class -----------------------------------------------------------------------------------

def setup_problems(plugin: Plugin, *, seeds: Iterable[int] = range(10)) -> list[Problem]:
    """What goes wrong when the framework makes the setup class and calls its points (the first problem
    per point)."""
    if plugin.setup is None:
        return []
    handle = FakeHandle(objects={kind: ObjectStore(kind) for kind in plugin.watches})
    try:
        instance = plugin.setup(plugin.default_args(), handle)
    except Exception as err:  # noqa: BLE001  (any exception is the problem to report)
        return [Problem(plugin.name, "setup", f"{plugin.setup.__name__}(default args, handle) raised "
                                              f"{type(err).__name__}: {err}")]
    found: dict[str, Problem] = {}
    vocabulary = Vocabulary.of(plugin)
    for seed in seeds:
        rng = random.Random(seed)
        nodes = [random_node(rng, f"n{i}", vocabulary) for i in range(3)]
        first, second = random_pod(rng, "p0", vocabulary), random_pod(rng, "p1", vocabulary)
        cycle = CycleState(ClusterView(nodes), "n0")
        calls: list[tuple[str, tuple[Any, ...]]] = [
            ("pre_enqueue", (first,)), ("post_filter", (cycle, first, {})), ("reserve", (cycle, first, "n0")),
            ("permit", (cycle, first, "n0")), ("unreserve", (cycle, first, "n0")),
            ("unreserve", (cycle, first, "n0")), ("pre_bind", (cycle, first, "n0")), ("bind", (cycle, first, "n0")),
            ("post_bind", (cycle, first, "n0"))]
        for method, call_args in calls:
            fn = getattr(instance, method, None)
            if fn is None or method in found:
                continue
            detail = _point_problem(fn, call_args, method)
            if detail:
                found[method] = Problem(plugin.name, "setup", f"{method}: {detail} (seed {seed})")
        sort_key = getattr(instance, "sort_key", None)
        if sort_key is not None and "sort_key" not in found:
            try:
                keys = sort_key(first, 0.0), sort_key(second, 1.0)
                keys[0] < keys[1]  # noqa: B015  (only whether they compare)
            except Exception as err:  # noqa: BLE001
                found["sort_key"] = Problem(plugin.name, "setup", f"sort_key: the keys of two pods do not compare: "
                                                                  f"{type(err).__name__}: {err} (seed {seed})")
    return list(found.values())


def _point_problem(fn: Any, call_args: tuple[Any, ...], method: str) -> str | None:
    try:
        status = fn(*call_args)
    except Exception as err:  # noqa: BLE001
        return f"raised {type(err).__name__}: {err}"
    if method == "unreserve" or status is None:
        return None
    if not isinstance(status, Status):
        return f"returned {status!r}: return None or a scheduler.framework.Status"
    if status.code is Code.WAIT and (method != "permit" or not 0 < status.timeout <= MAX_PERMIT_WAIT):
        return (f"returned WAIT with a timeout of {status.timeout}s: only Permit waits, for above 0s and at most "
                f"{MAX_PERMIT_WAIT:.0f}s")
    return None


# -- batch forms -----------------------------------------------------------------------------------

def batch_form_problems(plugin: Plugin, *, seeds: Iterable[int] = range(10), nodes: int = 30,
                        pods_per_list: int = 4, extra_args: Sequence[Args] = ()) -> list[Problem]:
    """Where a batch form differs from its per-node form (the first difference per args and form)."""
    if plugin.filter_batch is None and plugin.score_batch is None:
        return []
    variants = [*args_variants(plugin), *extra_args]
    vocabulary = Vocabulary.of(plugin)
    found: dict[tuple[str, int], Problem] = {}
    exercised: set[str] = set()  # the forms some generated pod reached
    for seed in seeds:
        rng = random.Random(seed)
        every = [random_node(rng, f"n{i}", vocabulary) for i in range(nodes)]
        # The whole list, and each node alone: a batch may take a slow path for the whole list because of one
        # odd node (e.g. a zero capacity), which must not hide a wrong fast path for the others.
        for group in [every, *([n] for n in every)]:
            for k in range(pods_per_list):
                pod = random_pod(rng, f"p{k}", vocabulary)
                for i, args in enumerate(variants):
                    for form, detail in _batch_differences(plugin, pod, group, args, exercised):
                        found.setdefault((form, i), Problem(
                            plugin.name, "batch-forms", f"{detail} (args {_show(args)}, seed {seed})"))
    for form, batch in (("filter", plugin.filter_batch), ("score", plugin.score_batch)):
        if batch is not None and form not in exercised:
            found[(form, -1)] = Problem(
                plugin.name, "batch-forms",
                f"no generated pod reached {form}_batch (its pre step returned None or a Status for every one), "
                "so it was not compared: declare the pod and node fields the plugin reads in requeue_on_fields "
                "(their map keys go into the generated labels and annotations), or name them in its args")
    return list(found.values())


def _batch_differences(plugin: Plugin, pod: PodInfo, nodes: list[NodeInfo], args: Args,
                       exercised: set[str]) -> list[tuple[str, str]]:
    cluster = ClusterView(nodes)
    out: list[tuple[str, str]] = []
    try:
        if plugin.filter_batch is not None and plugin.filter_node is not None:
            state = plugin.prepare_filter(pod, args, cluster)
            if state is not None and not isinstance(state, Status):
                exercised.add("filter")
                expected = [_verdict(plugin.filter_node(state, n)) for n in nodes]
                got = plugin.filter_batch(state, nodes)
                got_verdicts = [None] * len(nodes) if got is None else [_verdict(v) for v in got]
                if len(got_verdicts) != len(nodes):
                    out.append(("filter", f"filter_batch gave {len(got_verdicts)} verdicts for {len(nodes)} nodes"))
                else:
                    for node, want, have in zip(nodes, expected, got_verdicts, strict=True):
                        if want != have:
                            detail = (f"filter_batch gives {_said(have)} for node {node.name} where filter_node "
                                      f"gives {_said(want)} (pod {pod.name})")
                            out.append(("filter", detail))
                            break
        if plugin.score_batch is not None and plugin.score_node is not None:
            state = plugin.prepare_score(pod, args, cluster)
            if state is not None:
                exercised.add("score")
                expected_scores = [plugin.score_node(state, n) for n in nodes]
                got_scores = list(plugin.score_batch(state, nodes))
                if len(got_scores) != len(nodes):
                    out.append(("score", f"score_batch gave {len(got_scores)} scores for {len(nodes)} nodes"))
                elif got_scores != expected_scores:
                    i = next(i for i, (a, b) in enumerate(zip(got_scores, expected_scores, strict=True)) if a != b)
                    detail = (f"score_batch gives {got_scores[i]} for node {nodes[i].name} where score_node gives "
                              f"{expected_scores[i]} (pod {pod.name})")
                    out.append(("score", detail))
    except PodSpecError:
        pass  # the plugin refuses a field of this pod by name, as the scheduler reports it: no batch to compare
    except Exception as err:  # noqa: BLE001 - a plugin raising on a generated pod is a finding to report
        out.append(("raised", f"raised {type(err).__name__}: {err} (pod {pod.name})"))
    return out


def _said(verdict: tuple[int, tuple[str, ...]] | None) -> str:
    if verdict is None:
        return "pass"
    code, reasons = verdict
    return f"{Code(code).name} {'; '.join(reasons)!r}"


def _verdict(status: Status | None) -> tuple[int, tuple[str, ...]] | None:
    """What the scheduler reports of a verdict (Status compares by identity)."""
    return None if status is None or status.ok else (int(status.code), tuple(status.reasons))


def args_variants(plugin: Plugin, limit: int = 16) -> list[Args]:
    """The default args, and the args with each choice field (Literal, Enum, bool) set to each of its
    values: every combination when there are at most ``limit``, else one field at a time."""
    default = plugin.default_args()
    choices: dict[str, list[Any]] = {}
    for name, info in type(default).model_fields.items():
        values = _choices(info.annotation)
        if values:
            choices[name] = values
    if not choices:
        return [default]
    combos = list(itertools.product(*choices.values()))
    if len(combos) <= limit:
        updates = [dict(zip(choices, combo, strict=True)) for combo in combos]
    else:
        updates = [{name: value} for name, values in choices.items() for value in values]
    variants = [default]
    for update in updates:
        variant = default.model_copy(update=update)
        if variant != default and variant not in variants:
            variants.append(variant)
    return variants


def _choices(annotation: Any) -> list[Any]:
    if annotation is bool:
        return [False, True]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return list(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return []


def _show(args: Args) -> str:
    shown = args.model_dump(exclude_none=True, exclude_defaults=True, mode="json")
    return str(shown) if shown else "default"


# -- requeue declarations ----------------------------------------------------------------------------

_META = frozenset({"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                   "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
                   "ownerReferences", "finalizers", "managedFields"})
# The fields of core/v1 Pod and Node in Kubernetes 1.36 (the API reference), by object and section.
KNOWN_FIELDS: dict[str, dict[str, frozenset[str]]] = {
    "pod": {
        "metadata": _META,
        "spec": frozenset({
            "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
            "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
            "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName", "hostNetwork",
            "hostPID", "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
            "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases", "priorityClassName",
            "priority", "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks",
            "preemptionPolicy", "overhead", "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers",
            "schedulingGates", "resourceClaims", "resources", "hostnameOverride", "workloadRef"}),
        "status": frozenset({
            "observedGeneration", "phase", "conditions", "message", "reason", "nominatedNodeName", "hostIP",
            "hostIPs", "podIP", "podIPs", "startTime", "initContainerStatuses", "containerStatuses", "qosClass",
            "ephemeralContainerStatuses", "resize", "resourceClaimStatuses", "extendedResourceClaimStatus"}),
    },
    "node": {
        "metadata": _META,
        "spec": frozenset({"podCIDR", "podCIDRs", "providerID", "unschedulable", "taints", "configSource",
                           "externalID"}),
        "status": frozenset({"capacity", "allocatable", "phase", "conditions", "addresses", "daemonEndpoints",
                             "nodeInfo", "images", "volumesInUse", "volumesAttached", "config", "runtimeHandlers",
                             "features", "declaredFeatures"}),
    },
}
# Fields holding a map of strings: a key below them is any key.
_STRING_MAPS = frozenset({("metadata", "labels"), ("metadata", "annotations"), ("spec", "nodeSelector"),
                          ("spec", "overhead"), ("status", "capacity"), ("status", "allocatable")})


def requeue_problems(plugin: Plugin) -> list[Problem]:
    if not plugin.filters:
        return []
    problems = []
    if not plugin.requeue_on & ClusterEvent.NODE_ADDED:
        problems.append(Problem(plugin.name, "requeue", "requeue_on lacks NODE_ADDED: a pod it rejected must be "
                                                        "retried when a node joins (a new node may fit)"))
    for kind, paths in (("node", plugin.node_fields), ("pod", plugin.pod_fields)):
        for path in sorted(paths, key=str):
            detail = field_path_problem(kind, path)
            if detail:
                problems.append(Problem(plugin.name, "requeue", f"requeue_on_fields {kind}.{path}: {detail}"))
    return problems


def field_path_problem(kind: str, path: FieldPath) -> str | None:
    """Why ``path`` names no field of a ``kind`` ("pod" or "node") object, or None."""
    section, *rest = path.steps
    known = KNOWN_FIELDS[kind].get(section)
    if known is None:
        return f"a {kind.capitalize()} has metadata, spec and status, not {section!r}"
    if not rest:
        return f"names the whole {section}: name the field(s) the plugin reads, e.g. {section}.{min(known)}"
    if rest[0] not in known:
        close = sorted(f for f in known if f.lower() == rest[0].lower() or f.lower().startswith(rest[0][:4].lower()))
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return f"{rest[0]!r} is not a field of a {kind.capitalize()}'s {section} in Kubernetes 1.36{hint}"
    if len(rest) > 2 and (section, rest[0]) in _STRING_MAPS:
        return f"{section}.{rest[0]} maps keys to strings: nothing lies below {path.steps[2]!r}"
    return None


# -- args ------------------------------------------------------------------------------------------

# YAML values of every kind: a typed field refuses at least one of them.
_WRONG_KINDS: tuple[Any, ...] = ({"unexpected": "map"}, ["unexpected", "list"], "unexpected-string", 12345, True)


def args_problems(plugin: Plugin) -> list[Problem]:
    def problem(detail: str) -> Problem:
        return Problem(plugin.name, "args", detail)

    model = plugin.args
    if not (isinstance(model, type) and issubclass(model, Args)):
        return [problem(f"args is {model!r}, not a subclass of scheduler.framework.Args")]
    try:
        default = plugin.default_args()
    except Exception as err:  # noqa: BLE001 - reported as the finding
        return [problem(f"the default args do not build: {_first_error(err)}")]
    problems = []
    dumped = default.model_dump(by_alias=True, exclude_none=True, mode="json", warnings=False)
    try:
        if model.model_validate(dumped) != default:
            problems.append(problem(f"the default args read back differently from {dumped}"))
    except pydantic.ValidationError as err:
        problems.append(problem(f"the default args, written out as {dumped}, are refused: {_first_error(err)}"))
    refused = _refusal(model, {**dumped, "noSuchField": 1})
    if refused is None or "noSuchField" not in refused:
        problems.append(problem("an unknown field (noSuchField) is accepted: derive the args from "
                                "scheduler.framework.Args, which refuses unknown fields"))
    for name, info in model.model_fields.items():
        if name in ("apiVersion", "kind"):
            continue
        key = info.alias or name
        refusals = [_refusal(model, {**dumped, key: value}) for value in _WRONG_KINDS]
        if all(r is None for r in refusals):
            problems.append(problem(f"field {key} accepts a map, a list, a string, a number and a bool alike: "
                                    "give it a type"))
        elif not any(r is not None and key in r for r in refusals):
            problems.append(problem(f"a wrong value of field {key} is refused without naming the field: "
                                    f"{next(r for r in refusals if r is not None)}"))
    return problems


def _refusal(model: type[Args], data: dict[str, Any]) -> str | None:
    """The error text (each error's field path and message) when ``data`` is refused, else None."""
    try:
        model.model_validate(data)
    except pydantic.ValidationError as err:
        return "; ".join(".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in err.errors())
    except (ValueError, TypeError) as err:
        return str(err)
    return None


def _first_error(err: Exception) -> str:
    if isinstance(err, pydantic.ValidationError):
        e = err.errors()[0]
        return ".".join(str(p) for p in e["loc"]) + ": " + e["msg"]
    return f"{type(err).__name__}: {err}"
