"""One scheduling decision (``Profile``): the plugins a schedulerName runs at filter and score, and the decision
itself: PreFilter, Filter from a rotating start in the node tree's order, Score, and the pick among tied nodes
as kube-scheduler 1.36 makes it (``ties``); nominated pods counted where they wait, and what-if verdicts for
preemption (``WhatIfJudge``). ``build_profiles`` makes one per configured profile; ``Profile.schedule`` returns a
``ScheduleResult`` (``result``). The points outside filter and score run through ``Extensions``. How and why,
step by step: docs/design/scheduling-cycle.md.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, Protocol

from scheduler.framework.cluster_event import NO_FIELDS, ClusterEvent, RequeueFields
from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.plugin import Args, Code, Plugin, Status
from scheduler.framework.points import POINTS, implements
from scheduler.framework.registry import Registry, in_tree_registry
from scheduler.framework.result import NO_NODES_MESSAGE, ScheduleResult, fit_error_message
from scheduler.framework.status import PluginFailure
from scheduler.framework.ties import first_in_heap_order
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.node import NodeTraits


class ResolvedPlugins(Protocol):
    """What a profile is built from: a configuration's profile after its merge rules
    (``scheduler.config.ResolvedProfile`` is one; the framework does not import the config)."""

    scheduler_name: str
    filters: Sequence[tuple[Plugin, Args]]
    scores: Sequence[tuple[Plugin, Args, int]]
    percentage_of_nodes_to_score: int | None
    post_filter: tuple[Plugin, Args] | None
    points: Mapping[str, Sequence[tuple[Plugin, Args]]]


class ResolvesProfiles(Protocol):
    """A configuration that yields its resolved profiles (``scheduler.config.KubeSchedulerConfiguration``)."""

    def resolved_profiles(self, registry: Registry | None = None) -> Sequence[ResolvedPlugins]: ...

__all__ = [
    "NO_NODES_MESSAGE",
    "NO_NOMINATED",
    "Nominated",
    "Profile",
    "ScheduleResult",
    "build_profiles",
    "first_in_heap_order",
    "fit_error_message",
    "num_feasible_nodes_to_find",
]

# Pods nominated to a node (status.nominatedNodeName) that count there for the pod being placed.
Nominated = Mapping[str, Sequence[PodInfo]]
# One filter plugin's part in a cycle: the plugin, its args and its pre_filter state for the pod.
Check = tuple[Plugin, Args, Any]
NO_NOMINATED: Nominated = {}

# The descriptor's functions and the point each belongs to, to name a plugin that raised (Profile.raised).
_POINT_OF_FUNCTION = {"pre_filter": "PreFilter", "filter_node": "Filter", "filter_batch": "Filter",
                      "pre_score": "PreScore", "score_node": "Score", "score_batch": "Score",
                      "normalize": "NormalizeScore", "replace_node": "PreFilter", "pre_filter_nodes": "PreFilter"}
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def _kube_scheduler_error(point: str, name: str, err: BaseException) -> str:
    """How kube-scheduler's framework words a plugin's Error status at each point."""
    if point in ("Filter", "Score", "NormalizeScore"):
        return f'running "{name}" {point.lower() if point != "NormalizeScore" else "normalize score"} plugin: {err}'
    return f'running {point} plugin "{name}": {err}'


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring (kube-scheduler's numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    wanted = num_all_nodes * percentage // 100
    return max(wanted, MIN_FEASIBLE_NODES_TO_FIND)


class Profile:
    """The plugins a schedulerName runs, and the decision procedure. Not thread-safe: one scheduling
    loop per Profile (it remembers where the previous decision stopped scanning)."""

    def __init__(
        self,
        scheduler_name: str,
        filters: Sequence[tuple[Plugin, Args]],
        scores: Sequence[tuple[Plugin, Args, int]],
        percentage_of_nodes_to_score: int | None = None,
        post_filter: tuple[Plugin, Args] | None = None,
        points: Mapping[str, Sequence[tuple[Plugin, Args]]] | None = None,
        random_ties: bool = False,
    ) -> None:
        self.scheduler_name = scheduler_name
        # The points outside filter and score by config key (ResolvedProfile.points); the runtime makes their
        # instances (scheduler.framework.Extensions). Default: PrioritySort and DefaultBinder's, when registered.
        self.points = dict(points) if points is not None else _default_points()
        self.filters = tuple(filters)
        self.scores = tuple(scores)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.post_filter = post_filter  # (DefaultPreemption, its args) when enabled
        self.random_ties = random_ties  # ties at random, as kube-scheduler with an extender; else heap order
        self._requeue_on = {plugin.name: plugin.requeue_on for plugin, _ in self.filters}
        self._requeue_fields = {plugin.name: RequeueFields(plugin.node_fields, plugin.pod_fields)
                                for plugin, _ in self.filters if plugin.requeue_on_fields}
        # Every node field a filter declares: what a node update is compared on besides the events.
        self.node_fields = frozenset(f for plugin, _ in self.filters for f in plugin.node_fields)
        # A plugin reads raw of the pods counted on nodes: the cache must keep their objects.
        self.reads_counted_pods_raw = any(plugin.reads_counted_pods_raw
                                          for plugin in self._plugins())
        self._watches = {plugin.name: plugin.watches for plugin in self._plugins() if plugin.watches}
        # Every kind a plugin of this profile watches ("group/version/resource"): the scheduler's informers.
        self.watches = frozenset(kind for kinds in self._watches.values() for kind in kinds)
        self._next_start = 0

    @classmethod
    def from_resolved(cls, resolved: ResolvedPlugins) -> Profile:
        return cls(resolved.scheduler_name, resolved.filters, resolved.scores,
                   resolved.percentage_of_nodes_to_score, resolved.post_filter, resolved.points)

    @classmethod
    def default(cls, scheduler_name: str = "default-scheduler", registry: Registry | None = None) -> Profile:
        """The registry's default plugin set (default: the in-tree one) with default args, as a config profile
        that changes nothing gets (scheduler.config resolves the same set)."""
        registry = registry if registry is not None else in_tree_registry()
        plugins = [(registry[name], weight) for name, weight in registry.defaults]
        return cls(scheduler_name,
                   [(p, p.default_args()) for p, _ in plugins if p.filters],
                   [(p, p.default_args(), weight or 1) for p, weight in plugins if p.scores],
                   post_filter=next(((p, p.default_args()) for p, _ in plugins if p.post_filter), None),
                   points={point.config: tuple((p, p.default_args()) for p, _ in plugins
                                               if implements(p, point) and not p.post_filter)
                           for point in POINTS if point.method})

    def without(self, plugin_names: Iterable[str]) -> Profile:
        """This profile minus the named filter plugins."""
        names = frozenset(plugin_names)
        return Profile(self.scheduler_name, [(p, a) for p, a in self.filters if p.name not in names], self.scores,
                       self.percentage_of_nodes_to_score, points=self.points, random_ties=self.random_ties)

    def __repr__(self) -> str:
        filters = ", ".join(p.name for p, _ in self.filters)
        scores = ", ".join(f"{p.name}x{w}" for p, _, w in self.scores)
        return f"Profile({self.scheduler_name!r}, filters=[{filters}], scores=[{scores}])"

    def requeue_triggers(self, rejected_by: Iterable[str]) -> ClusterEvent:
        """The cluster events that may make a pod these filter plugins rejected schedulable: the union of
        what each declares. A pod no plugin rejected (there were no nodes) waits for any event."""
        triggers = ClusterEvent.NONE
        for name in rejected_by:
            triggers |= self._requeue_on.get(name, ClusterEvent.ANY)
        return triggers or ClusterEvent.ANY

    def requeue_fields(self, rejected_by: Iterable[str]) -> RequeueFields:
        """The fields read through raw (of nodes, of the pod) whose change may make a pod these filter
        plugins rejected schedulable: the union of what each declares in requeue_on_fields."""
        fields = NO_FIELDS
        for name in rejected_by:
            fields |= self._requeue_fields.get(name, NO_FIELDS)
        return fields

    def requeue_kinds(self, rejected_by: Iterable[str]) -> frozenset[str]:
        """The watched kinds whose change may make a pod these plugins rejected schedulable: those they watch."""
        return frozenset(kind for name in rejected_by for kind in self._watches.get(name, ()))

    def raised(self, err: BaseException) -> Status:
        """An ERROR status for an exception raised in this profile's filter or score functions, naming the
        outermost of its plugins' functions in the traceback as kube-scheduler names a failing plugin
        ('running PreFilter plugin "X": raised ValueError: ...'); the framework itself when none is."""
        codes = {}
        for plugin in self._plugins():
            for attr, point in _POINT_OF_FUNCTION.items():
                fn = getattr(plugin, attr, None)
                if fn is not None and hasattr(fn, "__code__"):
                    codes.setdefault(fn.__code__, (plugin.name, point))
        tb = err.__traceback__
        while tb is not None:
            found = codes.get(tb.tb_frame.f_code)
            if found is not None:
                name, point = found
                if isinstance(err, PluginFailure):
                    return Status(Code.ERROR, (_kube_scheduler_error(point, name, err),), name)
                return Status(Code.ERROR, (f'running {point} plugin "{name}": raised {type(err).__name__}: {err}',),
                              name)
            tb = tb.tb_next
        return Status(Code.ERROR, (f"scheduling failed: {type(err).__name__}: {err}",))

    def plugins(self) -> Iterator[Plugin]:
        """Every plugin the profile runs, at any point (a plugin at several points may come more than once)."""
        return self._plugins()

    def _plugins(self) -> Iterator[Plugin]:
        yield from (plugin for plugin, _ in self.filters)
        yield from (plugin for plugin, _, _ in self.scores)
        if self.post_filter is not None:
            yield self.post_filter[0]
        yield from (plugin for plugins in self.points.values() for plugin, _ in plugins)

    def schedule(self, pod: PodInfo, nodes: Sequence[NodeInfo], rng: random.Random,
                 cluster: ClusterView | None = None, nominated: Nominated = NO_NOMINATED) -> ScheduleResult:
        """Choose a node for the pod among ``nodes`` (a consistent snapshot, not modified); ``cluster`` is
        the same snapshot as plugins that read the whole cluster see it (default: built from ``nodes``);
        ``nominated``: the pods waiting for room on a node that count there for this pod (node -> pods)."""
        num_all = len(nodes)
        if num_all == 0:
            return ScheduleResult(pod.key, None, 0, 0, message=NO_NODES_MESSAGE)
        if cluster is None:
            cluster = ClusterView(nodes)
        checks = self._pre_filter(pod, cluster)
        if isinstance(checks, Status):  # rejected whatever the node: every node fails with that status
            result = ScheduleResult(pod.key, None, num_all, 0, failures={n.name: checks for n in nodes},
                                    pre_filter_rejection=checks)
            result.message = fit_error_message(num_all, result.failures, checks)
            return result
        narrowed = _narrowed(checks, nodes)
        if isinstance(narrowed, Status):
            result = ScheduleResult(pod.key, None, num_all, 0, failures={n.name: narrowed for n in nodes},
                                    pre_filter_rejection=narrowed)
            result.message = fit_error_message(num_all, result.failures, narrowed)
            return result
        candidates, absent = narrowed
        if pod.nominated_node_name:  # kube-scheduler's evaluateNominatedNode: the room preemption made
            room = next((n for n in candidates if n.name == pod.nominated_node_name), None)
            if room is not None and (self._passing_with_nominated(pod, cluster, checks, [room], {}, nominated)
                                     if nominated else _passing(checks, [room], {})):
                return ScheduleResult(pod.key, room.name, num_all, 1, [room.name])
        feasible, failures, evaluated = self._find_feasible(pod, cluster, checks, candidates, nominated, num_all)
        failures.update(absent)
        result = ScheduleResult(pod.key, None, num_all, evaluated, [n.name for n in feasible], failures)
        if not feasible:
            result.message = fit_error_message(num_all, failures)
            return result
        if len(feasible) == 1:
            result.node_name = feasible[0].name
            return result
        totals, result.scores = self.score_nodes(pod, feasible, cluster)
        result.totals = totals
        if self.random_ties:
            best = max(totals)
            tied = [i for i, total in enumerate(totals) if total == best]
            chosen = tied[rng.randrange(len(tied))] if len(tied) > 1 else tied[0]
        else:
            chosen = first_in_heap_order(totals)
        result.node_name = feasible[chosen].name
        return result

    def _find_feasible(self, pod: PodInfo, cluster: ClusterView, checks: list, nodes: Sequence[NodeInfo],
                       nominated: Nominated, num_all_nodes: int) -> tuple[list[NodeInfo], dict[str, Status], int]:
        """Visit ``nodes`` from where the last decision stopped until enough are feasible: the feasible nodes
        in visiting order, the rejected nodes' Status and how many nodes count as visited.

        As kube-scheduler's findNodesThatPassFilters with one goroutine: the search goes on until it finds one
        feasible node more than wanted, which is left out and is where the next decision starts
        (``nextStartNodeIndex`` advances by the nodes visited before it, modulo ``num_all_nodes``, the whole
        snapshot). A profile without score plugins wants one node.

        Nodes are checked in chunks, one plugin at a time over the chunk (a batch call or a list
        comprehension per plugin instead of a Python loop per node and plugin: the same verdicts, a
        fraction of the cost). A chunk is sized to what is still wanted; verdicts of nodes past the one that
        ended the search are dropped, as kube-scheduler never visits them. Only the visited part of ``nodes``
        is copied, so a decision costs no O(all nodes) work when it stops early.
        """
        num_all = len(nodes)
        wanted = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, num_all) if self.scores else 1
        start = self._next_start % num_all
        feasible: list[NodeInfo] = []
        failures: dict[str, Status] = {}
        pos = 0
        visited = num_all  # nodes visited before the one that ended the search (all, if none did)
        while pos < num_all:
            missing = wanted + 1 - len(feasible)
            if pos:  # scale the next chunk by the pass rate seen so far
                missing = missing * pos // max(len(feasible), 1)
            size = min(max(missing, 16), num_all - pos)
            chunk = _window(nodes, (start + pos) % num_all, size)
            if nominated:
                passing = self._passing_with_nominated(pod, cluster, checks, chunk, failures, nominated)
            else:
                passing = _passing(checks, chunk, failures)
            room = wanted - len(feasible)
            if len(passing) > room:  # the node after the wanted ones ends the search
                extra = passing[room]
                at = len(chunk) - 1  # from the end: usually the chunk's last node
                while chunk[at] is not extra:
                    at -= 1
                for node in chunk[at + 1:]:
                    failures.pop(node.name, None)
                feasible.extend(passing[:room])
                visited = pos + at
                break
            feasible.extend(passing)
            pos += size
        self._next_start = (self._next_start + visited) % num_all_nodes
        return feasible, failures, visited

    def filter_nodes(self, pod: PodInfo, nodes: Sequence[NodeInfo], cluster: ClusterView | None = None,
                     ) -> tuple[list[NodeInfo], dict[str, Status]]:
        """Every node's filter verdict, with no sampling and no rotating start: the feasible nodes in the
        given order and each rejected node's Status. The extender answers with this for the nodes
        kube-scheduler already chose to evaluate. ``cluster``: the whole snapshot, for plugins that read
        the cluster (default: built from ``nodes``). Raises model.PodSpecError as ``schedule`` does."""
        checks = self._pre_filter(pod, cluster if cluster is not None else ClusterView(nodes))
        if isinstance(checks, Status):
            return [], {n.name: checks for n in nodes}
        narrowed = _narrowed(checks, nodes)
        if isinstance(narrowed, Status):
            return [], {n.name: narrowed for n in nodes}
        candidates, failures = narrowed
        return _passing(checks, candidates, failures), failures

    def node_verdict(self, pod: PodInfo, node: NodeInfo, cluster: ClusterView,
                     nominated: Sequence[PodInfo] = ()) -> Status | None:
        """One node's filter verdict (None: it fits) with ``node`` standing in for its namesake in
        ``cluster``: a what-if copy, such as the node with preemption victims removed. ``nominated``: the
        pods waiting for room on it that count for this pod. Judging several copies for one pod: use
        ``what_if_judge`` once. Raises model.PodSpecError as ``schedule`` does."""
        return self.what_if_judge(pod, cluster).verdict(node, nominated)

    def what_if_judge(self, pod: PodInfo, cluster: ClusterView) -> WhatIfJudge:
        """Verdicts of what-if copies of ``cluster``'s nodes for ``pod``, PreFilter run once (preemption's dry
        run). Raises model.PodSpecError as ``schedule`` does."""
        return WhatIfJudge(self, pod, cluster)

    def _verdict_afresh(self, pod: PodInfo, node: NodeInfo, cluster: ClusterView,
                        nominated: Sequence[PodInfo]) -> Status | None:
        """``node_verdict`` with PreFilter run over the whole view holding ``node``."""
        with cluster.what_if(node) as view:
            checks = self._pre_filter(pod, view)
            if isinstance(checks, Status):  # rejected whatever the node (e.g. its claim went away meanwhile)
                return checks
            return self._verdict(pod, view, checks, node, nominated)

    def _verdict(self, pod: PodInfo, cluster: ClusterView, checks: list[Check], node: NodeInfo,
                 nominated: Sequence[PodInfo]) -> Status | None:
        failures: dict[str, Status] = {}
        if nominated:
            self._passing_with_nominated(pod, cluster, checks, [node], failures, {node.name: nominated})
        else:
            _passing(checks, [node], failures)
        return failures.get(node.name)

    def score_nodes(self, pod: PodInfo, nodes: list[NodeInfo], cluster: ClusterView | None = None,
                    ) -> tuple[list[int], dict[str, list[int]]]:
        """Each node's total (every score plugin normalised to 0..100, times its weight, summed) and each
        plugin's weighted scores, aligned with ``nodes``. ``cluster``: the whole snapshot, for plugins that
        read the cluster (default: built from ``nodes``). Raises model.PodSpecError as ``schedule`` does."""
        if cluster is None:
            cluster = ClusterView(nodes)
        totals: list[int] | None = None
        by_plugin: dict[str, list[int]] = {}
        for plugin, args, weight in self.scores:
            state = plugin.prepare_score(pod, args, cluster, nodes)
            if state is None:
                by_plugin[plugin.name] = [0] * len(nodes)
                continue
            scores = plugin.raw_scores(state, nodes)
            if plugin.normalize is not None:
                plugin.normalize(scores, args)
            if weight != 1:
                scores = [s * weight for s in scores]
            totals = list(scores) if totals is None else list(map(operator.add, totals, scores))
            by_plugin[plugin.name] = scores
        return (totals if totals is not None else [0] * len(nodes)), by_plugin

    def _passing_with_nominated(self, pod: PodInfo, cluster: ClusterView, checks: list[Check],
                                chunk: list[NodeInfo], failures: dict[str, Status], nominated: Nominated,
                                ) -> list[NodeInfo]:
        """``_passing`` counting, on each node, the pods nominated to it (kube-scheduler's
        RunFilterPluginsWithNominatedPods): a node with some must take the pod with them added, and also
        without them (a nominated pod may be what satisfied a rule), so a lower-priority pod never takes room
        preemption freed for another. With them added, the checks count them in the cluster-wide state too
        (``_checks_replacing``), for the pods nominated to this node only, as upstream."""
        index = cluster.index
        plain, crowded = [], []
        for node in chunk:
            pods = nominated.get(node.name)
            if pods:  # a nominated pod the cache already holds bound (the informer got there first) counts there
                pods = [p for p in pods if not index.holds(p.uid)]
            if pods:
                crowded.append((node, pods))
            else:
                plain.append(node)
        fits = {n.name for n in _passing(checks, plain, failures)} if plain else set()
        for node, pods in crowded:
            with_them = node.clone()
            for waiting in pods:
                with_them.add_pod(waiting)
            with self._checks_replacing(pod, cluster, checks, node, with_them) as (crowded_checks, _):
                if isinstance(crowded_checks, Status):
                    failures[node.name] = crowded_checks
                    continue
                fits_crowded = bool(_passing(crowded_checks, [with_them], failures))
            if fits_crowded and _passing(checks, [node], failures):
                fits.add(node.name)
        return [n for n in chunk if n.name in fits]

    @contextmanager
    def _checks_replacing(self, pod: PodInfo, cluster: ClusterView, checks: list[Check], old: NodeInfo,
                          new: NodeInfo) -> Iterator[tuple[list[Check] | Status, ClusterView]]:
        """``checks`` with ``new`` (the same node with pods added or removed) standing in for ``old``, valid
        inside the block (kube-scheduler's PreFilterExtensions AddPod/RemovePod on a copy of the cycle state):
        a plugin that reads the cluster updates its state through its ``replace_node``, or, without one, runs
        its pre_filter again over the view holding ``new`` (the shared pod index counts ``new``'s pods until
        the block ends, so those states are read inside it); the other plugins keep their state. Plugins
        skipped at the cycle's PreFilter (not in ``checks``) stay out and those in it stay in, even with
        nothing left to check on the copy (a None state), as upstream fixes its skip set at PreFilter. A
        Status: the pod is refused on ``new`` whatever it is. Also yields the view to judge ``new`` in (and to
        nest in): the what-if view if one was needed, else ``cluster``."""
        if not any(plugin.reads_cluster for plugin, _, _ in checks):
            yield checks, cluster
            return
        with ExitStack() as stack:
            view: ClusterView | None = None
            replaced: list[Check] = []
            for plugin, args, state in checks:
                if plugin.reads_cluster:
                    if plugin.replace_node is not None and state is not None:
                        state = plugin.replace_node(state, pod, args, old, new)
                    else:
                        if view is None:
                            view = stack.enter_context(cluster.what_if(new))
                        state = plugin.prepare_filter(pod, args, view)
                    if isinstance(state, Status):
                        yield state, view or cluster
                        return
                # A None state stays in: the plugin was active at the cycle's PreFilter and has nothing to
                # check on this copy, but may again on a copy of it (upstream fixes its skip set at PreFilter).
                replaced.append((plugin, args, state))
            yield replaced, view or cluster

    def _pre_filter(self, pod: PodInfo, cluster: ClusterView) -> list[Check] | Status:
        """(plugin, args, per-pod state) of each filter plugin with something to check for this pod, or the
        first plugin's Status that rejects the pod whatever the node (kube-scheduler stops PreFilter there
        too); ``cluster`` is the snapshot as plugins that read the whole cluster see it."""
        checks: list[Check] = []
        for plugin, args in self.filters:
            state = plugin.prepare_filter(pod, args, cluster)
            if state is None:
                continue
            if isinstance(state, Status):
                return state
            checks.append((plugin, args, state))
        return checks


class WhatIfJudge:
    """Filter verdicts of what-if copies of a snapshot's nodes (victims removed, some put back) for one pod:
    PreFilter runs once over the snapshot and each copy's verdict derives from that state
    (``Profile._checks_replacing``), as kube-scheduler's SelectVictimsOnNode runs RemovePod/AddPod on a copy
    of the cycle state instead of PreFilter over the cluster per victim."""

    def __init__(self, profile: Profile, pod: PodInfo, cluster: ClusterView) -> None:
        self.profile, self.pod, self.cluster = profile, pod, cluster
        self.checks = profile._pre_filter(pod, cluster)
        self._real = {n.name: n for n in cluster.nodes}

    def verdict(self, node: NodeInfo, nominated: Sequence[PodInfo] = ()) -> Status | None:
        """``node`` (a copy of a snapshot node) standing in for its namesake; None: the pod fits there."""
        real = self._real.get(node.name)
        # Nothing to derive from, or a copy that differs beyond its pods (cordoned, tainted: plugins skip
        # their PreFilter when no node in the snapshot is): judge it over a view holding it.
        if isinstance(self.checks, Status) or real is None or NodeTraits.of((real,)) != NodeTraits.of((node,)):
            return self.profile._verdict_afresh(self.pod, node, self.cluster, nominated)
        with self.profile._checks_replacing(self.pod, self.cluster, self.checks, real, node) as (checks, view):
            if isinstance(checks, Status):
                return checks
            return self.profile._verdict(self.pod, view, checks, node, nominated)


def _narrowed(checks: list[Check], nodes: Sequence[NodeInfo],
              ) -> tuple[Sequence[NodeInfo], dict[str, Status]] | Status:
    """The nodes worth filtering and the Status of each node left out, after the plugins whose PreFilter
    names the only nodes that can fit (``Plugin.pre_filter_nodes``, kube-scheduler's PreFilterResult): the
    nodes every such plugin names; the others fail "node(s) didn't satisfy plugin(s) [<names>]" unresolvably.
    A Status when the plugins' nodes have none in common."""
    names: frozenset[str] | None = None
    plugins: list[str] = []
    for plugin, _, state in checks:
        if plugin.pre_filter_nodes is None:
            continue
        these = plugin.pre_filter_nodes(state)
        if these is None:
            continue
        names = these if names is None else names & these
        plugins.append(plugin.name)
    if names is None:
        return nodes, {}
    listed = f"[{' '.join(sorted(plugins))}]"  # Go's %v of a []string
    if not names:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (f"node(s) didn't satisfy plugin(s) {listed} simultaneously",), plugins[0])
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) {listed}",), plugins[0])
    return [n for n in nodes if n.name in names], {n.name: absent for n in nodes if n.name not in names}


def _passing(checks: list[Check], chunk: list[NodeInfo], failures: dict[str, Status]) -> list[NodeInfo]:
    """The nodes of ``chunk`` every check lets through, one plugin at a time over the whole chunk; each
    rejected node's Status goes into ``failures``."""
    for plugin, _, state in checks:
        if state is None:  # nothing to check on this what-if copy (Profile._checks_replacing)
            continue
        verdicts = plugin.verdicts(state, chunk)
        if verdicts is None or verdicts.count(None) == len(verdicts):
            continue
        failures.update({n.name: v for n, v in zip(chunk, verdicts, strict=True) if v is not None})
        chunk = [n for n, v in zip(chunk, verdicts, strict=True) if v is None]
        if not chunk:
            break
    return chunk


def _window(nodes: Sequence[NodeInfo], start: int, size: int) -> list[NodeInfo]:
    """``size`` nodes from ``start``, wrapping around the end (size <= len(nodes))."""
    end = start + size
    if end <= len(nodes):
        return list(nodes[start:end])
    return list(nodes[start:]) + list(nodes[:end - len(nodes)])


def _default_points() -> dict[str, tuple[tuple[Plugin, Args], ...]]:
    """kube-scheduler's defaults outside filter and score: PrioritySort and DefaultBinder (in-tree)."""
    registry = in_tree_registry()
    return {"queueSort": ((registry["PrioritySort"], registry["PrioritySort"].default_args()),),
            "bind": ((registry["DefaultBinder"], registry["DefaultBinder"].default_args()),)}


def build_profiles(config: ResolvesProfiles, registry: Registry | None = None) -> dict[str, Profile]:
    """One Profile per configured schedulerName, its plugins taken from ``registry`` (default: the registry
    the config was parsed with)."""
    return {r.scheduler_name: Profile.from_resolved(r) for r in config.resolved_profiles(registry)}
