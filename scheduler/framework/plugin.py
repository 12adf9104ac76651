"""What every plugin is made of: a verdict type (``Status``, ``Code``), its args (``Args``) and its descriptor
(``Plugin``). A plugin module declares its descriptors in a module-level ``PLUGINS`` list
(``scheduler.framework.registry``).

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

Requeue triggers: ``requeue_on`` names the cluster events (``scheduler.framework.cluster_event``) that can
undo the plugin's rejection, such as a new node or a changed taint for TaintToleration; the scheduling queue
retries a pod no node fits only on an event one of its rejecting plugins declares. A plugin that reads a
field the model does not parse (through ``pod.raw`` / ``node.raw``) names it in ``requeue_on_fields``, e.g.
``"node.metadata.annotations['example.com/rack']"`` or ``"pod.spec.runtimeClassName"``: an update that
changes it retries the pods the plugin rejected (a new node always does), with no new ClusterEvent.

The points outside filter and score (PreEnqueue, QueueSort, PostFilter, Reserve/Unreserve, Permit, PreBind,
Bind, PostBind) are methods of the plugin's ``setup`` class, made once per profile as ``setup(args, handle)``
(``scheduler.framework.points`` lists them; ``extensions`` runs them by kube-scheduler's rules). There a plugin
may keep state and act through the ``Handle``; filter and score stay pure.

Batch forms (optional, for speed): ``filter_batch(state, nodes)`` returns the verdicts aligned with
``nodes``, or ``None`` when every node passes; ``score_batch(state, nodes)`` returns the raw scores. They
must give exactly what ``filter_node`` / ``score_node`` give node by node (``python -m scheduler.testing
check SOURCE`` checks it over generated pods and nodes, as tests/scheduler/test_batch_forms.py does for the
bundled ones); they exist because a Python call per node and plugin is most of a decision's cost at 1,000+ nodes, and a
comprehension that only reads attributes, or a quick "nothing to reject here" scan, is several times cheaper.
The framework uses them when present and falls back to the per-node functions otherwise.

Memo: ``per_node_memo`` lets a batch form keep per-node values between decisions (``scheduler.framework.memo``).
Normalisation helpers (``default_normalize``, ``min_max_normalize``) are in ``scheduler.framework.normalize``.

Contracts: each function field has one call signature (``scheduler.framework.signatures``: a Protocol per
extension point), and a plugin with a bad combination (a batch form without its per-node form, a per-node
half without the pre step making its state, ``replace_node`` without ``reads_cluster``...) is refused when
it is registered (``Registry``), naming the plugin and where it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.framework.cluster_event import ClusterEvent
from scheduler.framework.cluster_view import ClusterView
from scheduler.framework.status import (
    SKIP,
    SUCCESS,
    Args,
    Code,
    NoArgs,
    PluginFailure,
    Status,
    unsupported_status,
)
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.raw import FieldPath

if TYPE_CHECKING:
    from scheduler.framework.signatures import (
        ClusterPreFilter,
        ClusterPreScore,
        Filter,
        FilterBatch,
        Normalize,
        PostFilterNote,
        PreFilter,
        PreFilterNodes,
        PreScore,
        ReplaceNode,
        Score,
        ScoreBatch,
    )

__all__ = ["SKIP", "SUCCESS", "Args", "Code", "NoArgs", "Plugin", "PluginFailure", "Status", "same_state", "unsupported_status"]


def same_state(state: Any, pod: PodInfo, args: Args, old: NodeInfo, new: NodeInfo) -> Any:
    """``Plugin.replace_node`` of a plugin that reads the cluster only for node traits (how many nodes are
    cordoned or tainted): pods added to or removed from a node change none."""
    return state


@dataclass(frozen=True, slots=True)
class Plugin:
    """One plugin: its name, args model, the function pairs it implements (None = not implemented), and for
    a filter the cluster events that can make a pod it rejected schedulable (kube-scheduler's
    EventsToRegister). A filter that declares none is retried on every event, as kube-scheduler treats a
    plugin without EnqueueExtensions."""

    name: str
    args: type[Args] = NoArgs
    pre_filter: PreFilter | ClusterPreFilter | None = None  # ClusterPreFilter when reads_cluster
    filter_node: Filter | None = None
    pre_score: PreScore | ClusterPreScore | None = None  # ClusterPreScore when reads_cluster
    score_node: Score | None = None
    normalize: Normalize | None = None
    filter_batch: FilterBatch | None = None
    score_batch: ScoreBatch | None = None
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
    replace_node: ReplaceNode | None = None
    # kube-scheduler's PreFilterResult: pre_filter state -> the only nodes worth filtering (None: every node).
    # The framework filters those alone; the others fail "node(s) didn't satisfy plugin(s) [<name>]".
    pre_filter_nodes: PreFilterNodes | None = None
    # Its PostFilter's part of a FailedScheduling message, run before preemption (scheduler.framework.post_filter):
    # (the pod, the PreFilter rejection if any) -> (text, whether the PostFilters after it still run).
    post_filter_note: PostFilterNote | None = None
    # The points outside filter and score (PreEnqueue, QueueSort, PostFilter, Reserve/Unreserve, Permit,
    # PreBind, Bind, PostBind): a class the framework makes once per profile as ``setup(args, handle)``
    # (kube-scheduler's plugin factory), whose methods of those names are the points it implements
    # (``scheduler.framework.points``). It may keep state and act through the ``Handle``.
    setup: type | None = None
    # The kinds it reads besides pods, nodes, namespaces and volumes, as "group/version/resource" ("v1/configmaps"
    # for the core group): the scheduler lists and watches each once and hands them out through
    # ``ClusterView.objects`` and ``Handle.objects``; a change to one retries the pods this plugin rejected.
    watches: tuple[str, ...] = ()
    # The kinds (and subresources) its binding-cycle points write through ``Handle.api``, as
    # "group/version/resource[/subresource]": deploy-scheduler grants the scheduler those writes.
    writes: tuple[str, ...] = ()
    # requeue_on_fields parsed: the node fields and the pod fields whose change may help.
    node_fields: frozenset[FieldPath] = field(default=frozenset(), init=False, repr=False)
    pod_fields: frozenset[FieldPath] = field(default=frozenset(), init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("requeue_on_fields", "watches", "writes"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"plugin {self.name}: {name} must be a tuple of strings, not one string")
        paths: dict[str, set[FieldPath]] = {"node": set(), "pod": set()}
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
