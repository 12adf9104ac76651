"""What every plugin is made of: a verdict type, a plugin descriptor, score normalisation helpers.

A plugin answers one question from a read-only snapshot, like a kube-scheduler framework plugin:
- Filter: may this pod go on this node? ``pre_filter(pod, args)`` runs once per scheduling cycle and
  returns the per-pod state the node check needs (kube-scheduler's PreFilter / CycleState), or ``None``
  when the plugin has nothing to check for this pod (every node passes, and the framework skips it), or
  a rejecting ``Status`` when no node can fit the pod whatever the node (a claim that does not exist): the
  pod is then rejected on every node with that reason alone, as kube-scheduler's PreFilter rejects it.
  A plugin that only ever refuses whole pods has a ``pre_filter`` and no ``filter_node``.
  ``filter_node(state, node)`` then runs per node and returns ``None`` when the node passes or a
  ``Status`` with kube-scheduler's reason text when it does not.
- Score: how good is this node? ``pre_score(pod, args)`` -> state or ``None`` (every node scores 0),
  ``score_node(state, node)`` -> int, and optionally ``normalize(scores, args)`` to rescale the list in
  place to 0..100 once all feasible nodes are scored.

Splitting per-pod work from per-node work keeps the hot path cheap: the node loop does no parsing and,
on success, allocates nothing. ``Plugin.filter(pod, node, args)``, ``Plugin.score(pod, node, args)`` (raw)
and ``Plugin.score_nodes(pod, nodes, args)`` (normalised) wrap both halves for tests and for the
placement explainer.

Plugins that need more than the pod and one node set ``reads_cluster``: their ``pre_filter(pod, args,
cluster)`` gets the cycle's ``ClusterView`` (every node of the snapshot with its pods, namespace labels, and
the pod index InterPodAffinity counts from), and their ``pre_score(pod, args, cluster, feasible)`` the view
and the nodes being scored (kube-scheduler's PreFilter and PreScore reading its snapshot lister).
PodTopologySpread counts pods per zone over ``cluster.nodes``, ImageLocality the nodes holding an image,
InterPodAffinity matching pods per topology domain from ``cluster.index``. The per-node halves stay as they
are: whatever the node loop needs from other nodes is computed once, in the pre step.

Requeue triggers: ``requeue_on`` names the cluster events (``scheduler.framework.cluster_event``) that can undo the
plugin's rejection, such as a new node or a changed taint for TaintToleration; the scheduling queue retries a
pod no node fits only on an event one of its rejecting plugins declares. A plugin that reads a field the
model does not parse (through ``pod.raw`` / ``node.raw``) names it in ``requeue_on_fields``, e.g.
``"node.metadata.annotations['example.com/rack']"`` or ``"pod.spec.runtimeClassName"``: an update that
changes it retries the pods the plugin rejected (a new node always does), with no new ClusterEvent.

Batch forms (optional, for speed): ``filter_batch(state, nodes)`` returns the verdicts aligned with
``nodes``, or ``None`` when every node passes; ``score_batch(state, nodes)`` returns the raw scores. They
must give exactly what ``filter_node`` / ``score_node`` give node by node (tests/scheduler checks this);
they exist because a Python call per node and plugin is most of a decision's cost at 1,000+ nodes, and a
comprehension that only reads attributes, or a quick "nothing to reject here" scan, is several times cheaper.
The framework uses them when present and falls back to the per-node functions otherwise.

Memo (``per_node_memo``): a batch form whose per-node value depends only on that node and a few numbers of
the pod (its requests, say) may keep the value on the node under a key naming the plugin and those numbers.
The snapshot hands every decision the same NodeInfo clone until its node changes (then a fresh clone, with
an empty memo), and each change empties the memo of the NodeInfo it changes: the next pod of the same kind
reads the value back instead of working it out again. The node a decision takes would then lack every
value at the next read, and a read that misses costs twice one that does not (nearly every read would, since
the node taken lies among the nodes read): so when the snapshot re-clones a changed node, ``carry_memo``
works out again on the new clone the values the old one held, for the kinds of pod read recently.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.model import NodeInfo, NodeTraits, PodInfo
from scheduler.model.pod_index import PodIndex
from scheduler.model.raw import FieldPath
from scheduler.model.volumes import VolumeStore

__all__ = [
    "MAX_NODE_SCORE",
    "SUCCESS",
    "Args",
    "ClusterView",
    "Code",
    "NoArgs",
    "Plugin",
    "Status",
    "carry_memo",
    "default_normalize",
    "min_max_normalize",
    "unsupported_status",
]

MAX_NODE_SCORE = 100


class Code(IntEnum):
    """Verdict codes, as kube-scheduler's framework names them."""

    SUCCESS = 0
    # The node does not fit now but could (e.g. after other pods leave): preemption might help.
    UNSCHEDULABLE = 2
    # Nothing about other pods would make this node fit (taints, selectors, names).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3


@dataclass(frozen=True, slots=True, eq=False)
class Status:
    """A filter verdict. ``reasons`` are counted per node in the FailedScheduling message, so they never
    name the node: "Insufficient cpu", "node(s) were unschedulable". Compared by identity (eq=False):
    the filter loop counts ``None`` verdicts with list.count, which would otherwise call a Python
    ``__eq__`` per failed node."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def reason(self) -> str:
        return ", ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS


SUCCESS = Status(Code.SUCCESS)


def unsupported_status(pod: PodInfo, plugin: str) -> Status | None:
    """The pre_filter rejection of a pod stating fields ``plugin`` would honour in kube-scheduler and this
    scheduler cannot (``PodInfo.unsupported``), or None. Unresolvable: no node or event can help."""
    if not pod.unsupported:
        return None
    messages = tuple(u.message for u in pod.unsupported if u.plugin == plugin)
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, messages, plugin) if messages else None


class Args(BaseModel):
    """Base of every plugin's pluginConfig args: unknown fields are errors. ``apiVersion``/``kind`` are
    accepted because kube-scheduler configs often carry them inside args (kind: NodeResourcesFitArgs)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    apiVersion: str | None = None
    kind: str | None = None


class NoArgs(Args):
    """For plugins that take no arguments."""


class ClusterView:
    """What a scheduling cycle may read beyond the pod and one node: every node with the pods counted on
    it, each namespace's labels, the pods indexed for inter-pod affinity (``index``), and the claims, PVs
    and StorageClasses the informers hold (``volumes``, read live as kube-scheduler's volume plugins read
    their listers), and how many of the nodes decided on are cordoned, tainted or list images (``traits``,
    by default counted over ``nodes``: a plugin skips its pass over the nodes when none is). A read-only
    view of one snapshot, whose cache keeps the index and the traits current; built from a plain node list
    (tests, the placement explainer), it indexes and counts on first use and knows no volumes."""

    __slots__ = ("_index", "_traits", "namespace_labels", "nodes", "volumes")

    def __init__(self, nodes: Sequence[NodeInfo], namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
                 index: PodIndex | None = None, volumes: VolumeStore | None = None,
                 traits: NodeTraits | None = None) -> None:
        self.nodes = nodes
        self.namespace_labels = namespace_labels if namespace_labels is not None else {}
        self._index = index
        self.volumes = volumes if volumes is not None else VolumeStore()
        self._traits = traits

    @property
    def index(self) -> PodIndex:
        if self._index is None:
            self._index = PodIndex.of(self.nodes, self.namespace_labels)
        return self._index

    @property
    def traits(self) -> NodeTraits:
        if self._traits is None:
            self._traits = NodeTraits.of(self.nodes)
        return self._traits

    @contextmanager
    def what_if(self, node: NodeInfo) -> Iterator[ClusterView]:
        """The view with ``node`` standing in for the node of its name (a what-if copy: preemption victims
        removed, nominated pods added) while the block runs: the nodes, the traits and the shared pod index
        count ``node``'s pods instead of the original's (kube-scheduler's PreFilterExtensions AddPod and
        RemovePod). The index is put back on leaving, so counts read from it inside hold only there; blocks
        nest. The volume store is shared."""
        original = next((n for n in self.nodes if n.name == node.name), None)
        if original is None:
            raise ValueError(f"what-if node {node.name!r} is not in the view")
        nodes = [node if n is original else n for n in self.nodes]
        traits = self._traits.replacing(original, node) if self._traits is not None else None
        index = self.index
        index.replace_node(original, node)
        try:
            yield ClusterView(nodes, self.namespace_labels, index, self.volumes, traits)
        finally:
            index.replace_node(node, original)

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace, _NO_LABELS)

    def pods(self) -> Iterator[tuple[Mapping[str, str], PodInfo]]:
        """Every counted pod with its node's labels."""
        for node in self.nodes:
            labels = node.labels
            for pod in node.pods.values():
                yield labels, pod


_NO_LABELS: Mapping[str, str] = {}


def same_state(state: Any, pod: PodInfo, args: Args, old: NodeInfo, new: NodeInfo) -> Any:
    """``Plugin.replace_node`` of a plugin that reads the cluster only for node traits (how many nodes are
    cordoned or tainted): pods added to or removed from a node change none."""
    return state


# (pod, args); a plugin that reads_cluster: pre_filter (pod, args, cluster), pre_score (pod, args, cluster, feasible)
PreFn = Callable[..., Any]
FilterFn = Callable[[Any, NodeInfo], "Status | None"]
ScoreFn = Callable[[Any, NodeInfo], int]
NormalizeFn = Callable[[list[int], Any], None]
FilterBatchFn = Callable[[Any, "list[NodeInfo]"], "list[Status | None] | None"]
ScoreBatchFn = Callable[[Any, "list[NodeInfo]"], list[int]]


@dataclass(frozen=True, slots=True)
class Plugin:
    """One plugin: its name, args model, the function pairs it implements (None = not implemented), and for
    a filter the cluster events that can make a pod it rejected schedulable (kube-scheduler's
    EventsToRegister). A filter that declares none is retried on every event, as kube-scheduler treats a
    plugin without EnqueueExtensions."""

    name: str
    args: type[Args] = NoArgs
    pre_filter: PreFn | None = None
    filter_node: FilterFn | None = None
    pre_score: PreFn | None = None
    score_node: ScoreFn | None = None
    normalize: NormalizeFn | None = None
    default_weight: int = 1
    filter_batch: FilterBatchFn | None = None
    score_batch: ScoreBatchFn | None = None
    # None: ANY, or NODE_ADDED alone when requeue_on_fields says what else may help.
    requeue_on: ClusterEvent | None = None  # type: ignore[assignment]  # always a ClusterEvent once built
    requeue_on_fields: tuple[str, ...] = ()  # "node.<path>" / "pod.<path>" (scheduler.model.raw.FieldPath)
    reads_cluster: bool = False
    # Reads ``raw`` of the pods counted on nodes (node.pods): the cache then keeps their objects.
    reads_counted_pods_raw: bool = False
    post_filter: bool = False  # runs when no node passes the filters (DefaultPreemption, scheduler.framework.preemption)
    # kube-scheduler's PreFilterExtensions (AddPod/RemovePod), for a plugin whose pre_filter counts the
    # cluster: (state, pod, args, old node, new node) -> the state with ``new`` (the same node with pods added
    # or removed) standing in for ``old``, without counting the cluster again. Without it the framework runs
    # pre_filter again over a view holding ``new`` (scheduler.framework.Profile._checks_replacing).
    replace_node: Callable[..., Any] | None = None
    # requeue_on_fields parsed: the node fields and the pod fields whose change may help.
    node_fields: frozenset[FieldPath] = field(default=frozenset(), init=False, repr=False)
    pod_fields: frozenset[FieldPath] = field(default=frozenset(), init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.requeue_on_fields, str):
            raise TypeError(f"plugin {self.name}: requeue_on_fields must be a tuple of paths, not one string")
        paths = {"node": set(), "pod": set()}
        for text in self.requeue_on_fields:
            kind, path = split_field(text, f"plugin {self.name}: requeue_on_fields")
            paths[kind].add(path)
        object.__setattr__(self, "node_fields", frozenset(paths["node"]))
        object.__setattr__(self, "pod_fields", frozenset(paths["pod"]))
        if self.requeue_on is None:
            object.__setattr__(self, "requeue_on",
                               ClusterEvent.NODE_ADDED if self.requeue_on_fields else ClusterEvent.ANY)

    @property
    def filters(self) -> bool:
        """A filter plugin: a per-node check, or a pre_filter alone that only ever refuses a pod whole."""
        return self.filter_node is not None or self.pre_filter is not None

    @property
    def scores(self) -> bool:
        return self.score_node is not None

    def default_args(self) -> Args:
        return self.args()

    def prepare_filter(self, pod: PodInfo, args: Args, cluster: ClusterView) -> Any:
        """The pre_filter state for one cycle over the snapshot ``cluster`` (None: every node passes; a
        Status: the pod is rejected on every node)."""
        assert self.pre_filter is not None, f"{self.name} does not filter"
        return self.pre_filter(pod, args, cluster) if self.reads_cluster else self.pre_filter(pod, args)

    def prepare_score(self, pod: PodInfo, args: Args, cluster: ClusterView,
                      feasible: Sequence[NodeInfo] | None = None) -> Any:
        """The pre_score state for scoring ``feasible`` (default: every node of ``cluster``) within the
        snapshot ``cluster`` (None: every node scores 0)."""
        assert self.pre_score is not None, f"{self.name} does not score"
        if self.reads_cluster:
            return self.pre_score(pod, args, cluster, cluster.nodes if feasible is None else feasible)
        return self.pre_score(pod, args)

    def filter(self, pod: PodInfo, node: NodeInfo, args: Args | None = None,
               cluster: ClusterView | None = None) -> Status:
        """Whole filter verdict for one pod on one node (both halves; for tests and explanations);
        ``cluster`` defaults to that node alone."""
        assert self.filters, f"{self.name} does not filter"
        state = self.prepare_filter(pod, args if args is not None else self.default_args(),
                                    cluster if cluster is not None else ClusterView([node]))
        if state is None:
            return SUCCESS
        if isinstance(state, Status):
            return state
        assert self.filter_node is not None, f"{self.name}'s pre_filter only refuses whole pods"
        return self.filter_node(state, node) or SUCCESS

    def score(self, pod: PodInfo, node: NodeInfo, args: Args | None = None,
              cluster: ClusterView | None = None) -> int:
        """Raw (not normalised) score of one node; ``cluster`` defaults to that node alone."""
        assert self.score_node is not None, f"{self.name} does not score"
        state = self.prepare_score(pod, args if args is not None else self.default_args(),
                                   cluster if cluster is not None else ClusterView([node]), (node,))
        return 0 if state is None else self.score_node(state, node)

    def score_nodes(self, pod: PodInfo, nodes: list[NodeInfo], args: Args | None = None,
                    cluster: ClusterView | None = None) -> list[int]:
        """Final 0..100 scores of several nodes (raw scores, then normalize if the plugin has one);
        ``cluster`` defaults to these nodes."""
        assert self.score_node is not None, f"{self.name} does not score"
        args = args if args is not None else self.default_args()
        state = self.prepare_score(pod, args, cluster if cluster is not None else ClusterView(nodes), nodes)
        if state is None:
            return [0] * len(nodes)
        scores = self.raw_scores(state, nodes)
        if self.normalize is not None:
            self.normalize(scores, args)
        return scores

    def verdicts(self, state: Any, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """Filter verdicts aligned with ``nodes`` for a pre_filter state, or None when every node passes
        (the batch form if the plugin has one, else ``filter_node`` node by node); a pre_filter rejection
        fails every node."""
        if isinstance(state, Status):
            return [state] * len(nodes)
        assert self.filter_node is not None, f"{self.name}'s pre_filter only refuses whole pods"
        if self.filter_batch is not None:
            return self.filter_batch(state, nodes)
        filter_node = self.filter_node
        return [filter_node(state, node) for node in nodes]

    def raw_scores(self, state: Any, nodes: list[NodeInfo]) -> list[int]:
        """Raw scores for a pre_score state (batch form if the plugin has one)."""
        assert self.score_node is not None, f"{self.name} does not score"
        if self.score_batch is not None:
            return self.score_batch(state, nodes)
        score_node = self.score_node
        return [score_node(state, node) for node in nodes]


def split_field(text: str, where: str) -> tuple[str, FieldPath]:
    """("node" | "pod", path) of a requeue field such as ``"node.metadata.annotations['a/b']"``; ValueError
    naming ``where`` and the path otherwise."""
    try:
        path = FieldPath(text)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    kind, *rest = path.steps
    if kind not in ("node", "pod") or not rest or rest[0] not in ("metadata", "spec", "status"):
        raise ValueError(f"{where}: {text!r} must start with node. or pod. and then metadata, spec or status, "
                         "e.g. \"node.metadata.annotations['example.com/rack']\"")
    return kind, FieldPath(text[len(kind) + 1:])


_MISSING = object()


def per_node_memo(key: str, nodes: list[NodeInfo], compute: Callable[[list[NodeInfo]], list[Any]]) -> list[Any]:
    """``compute(nodes)``, each node's value read from ``node.memo[key]`` where it is there and computed (in
    ``compute`` calls over the nodes without it) and kept there otherwise. ``key`` must name the plugin and
    everything of the pod the value depends on; the value may depend on nothing but the node besides.
    Make it a str: a str caches its hash, a tuple hashes its items again on every one of the lookups."""
    # One str object per kind: a lookup then matches the stored key by identity, where an equal str built
    # by another decision is compared byte by byte, reading that cold object for every node.
    key = sys.intern(key)
    if key not in _recent_kinds:
        _remember_kind(key, compute)
    try:
        return [node.memo[key] for node in nodes]  # every node known: a third of the cost of memo.get
    except KeyError:
        pass
    # Some node changed since this kind of pod last saw it (typically the one a decision took): the same
    # fast read, chunk by chunk, so that only a chunk holding such a node pays for memo.get.
    values: list[Any] = []
    for start in range(0, len(nodes), _MEMO_CHUNK):
        chunk = nodes[start:start + _MEMO_CHUNK]
        try:
            values += [node.memo[key] for node in chunk]
        except KeyError:
            values += _fill_memo(key, chunk, compute)
    return values


_MEMO_CHUNK = 64


def _fill_memo(key: str, nodes: list[NodeInfo], compute: Callable[[list[NodeInfo]], list[Any]]) -> list[Any]:
    values = [node.memo.get(key, _MISSING) for node in nodes]
    missing = [i for i, value in enumerate(values) if value is _MISSING]
    for i, value in zip(missing, compute([nodes[i] for i in missing]), strict=True):
        values[i] = value
        nodes[i].memo[key] = value
    return values


# key -> compute of the last kinds of pod per_node_memo was asked for (oldest first; an evicted kind comes
# back at its next read), for carry_memo: bounded, so that kinds no longer scheduled stop being worked out
# again on every change.
_recent_kinds: dict[str, Callable[[list[NodeInfo]], list[Any]]] = {}
_RECENT_KINDS = 32


def _remember_kind(key: str, compute: Callable[[list[NodeInfo]], list[Any]]) -> None:
    _recent_kinds[key] = compute
    if len(_recent_kinds) > _RECENT_KINDS:
        _recent_kinds.pop(next(iter(_recent_kinds)), None)


def carry_memo(old: NodeInfo, new: NodeInfo) -> None:
    """Fill ``new`` (a fresh clone of a node that changed) with the values ``old`` (its previous clone) held
    for recently read kinds of pod, worked out again on ``new``'s state: what the next read would otherwise
    compute after missing them."""
    for key in old.memo:
        compute = _recent_kinds.get(key)
        if compute is None:
            continue
        try:
            new.memo[key] = compute([new])[0]
        except Exception:  # noqa: BLE001, S112 - left to the plugin, which meets it reading this node
            continue


def default_normalize(scores: list[int], reverse: bool = False) -> None:
    """kube-scheduler's DefaultNormalizeScore: scale so the highest raw score becomes 100; with
    ``reverse`` a higher raw score is worse (100 - scaled). All zeros stay 0, or all become 100 reversed."""
    top = max(scores, default=0)
    if top == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, raw in enumerate(scores):
        scaled = MAX_NODE_SCORE * raw // top
        scores[i] = MAX_NODE_SCORE - scaled if reverse else scaled


def min_max_normalize(scores: list[int], lower_is_better: bool) -> None:
    """Map the best raw value to 100 and the worst to 0, linearly, rounding down: only nodes holding the
    best raw value get 100, so a random pick among the top never takes a worse node."""
    if not scores:
        return
    low, high = min(scores), max(scores)
    if low == high:
        scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    span = high - low
    if lower_is_better:
        scores[:] = [MAX_NODE_SCORE * (high - s) // span for s in scores]
    else:
        scores[:] = [MAX_NODE_SCORE * (s - low) // span for s in scores]
