"""Counted pods indexed for inter-pod affinity (``PodIndex``): how many pods a term matches in each topology
domain, and how many existing pods' anti-affinity terms a pod matches, without reading every pod per
decision.

Lookups: a selector is looked up by its narrowest single-value ``In`` requirement (its anchor; matchLabels
entries are such requirements), which every pod it matches carries; a selector without one (only Exists,
NotIn, DoesNotExist, several values) reads every pod. Pods with required anti-affinity are kept by the
anchors of their terms, so a pod finds the terms that may select it through its own labels.

Counts: each question asked (the domains of the pods matching these terms; of the pods whose anti-affinity
matches a pod with these labels; what the terms of pods that score others give a pod with these labels) is
answered once and then kept current as pods come and go: adding or removing a pod updates every kept answer
by that one pod.

Upkeep: a snapshot that re-clones changed nodes tells the index in two phases, ``forget`` for every changed
node, then ``learn`` for every changed node, so that a pod moved between two of them ends up on its new node.
Only the pods that changed are touched (a node holding 100 pods gains one per decision), unless the node's
labels changed, which re-indexes its pods. Entries carry the node's labels (the domains), not the node.
Only answers that read at least ``WORTH_KEEPING`` pods are kept (a small one costs less to compute again
than to keep current), for the ``KEPT_ANSWERS`` questions asked last; namespace labels changing drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from scheduler.model.labels import LabelSelector
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.model.pod_affinity import AffinityTerm

Entry = tuple[Mapping[str, str], PodInfo]  # (labels of the pod's node, pod)
CountPod = Callable[["TopologyCounts", Mapping[str, str], PodInfo, int], None]
TopologyCounts = dict[tuple[str, str], int]  # (topology key, value) -> pods
_Label = tuple[str, str]
_NONE: Mapping[str, Entry] = {}
_NO_LABELS: Mapping[str, str] = {}
KEPT_ANSWERS = 64
WORTH_KEEPING = 32


def anchor(selector: LabelSelector) -> _Label | None:
    """A (key, value) every pod the selector matches carries, if the selector names one."""
    for req in selector.requirements:
        if req.operator == "In" and len(req.values) == 1:
            return req.key, next(iter(req.values))
    return None


class _Answer:
    """The counts answering one question, and how one pod changes them."""

    __slots__ = ("count_pod", "counts")

    def __init__(self, count_pod: CountPod) -> None:
        self.counts: TopologyCounts = {}
        self.count_pod = count_pod


class PodIndex:
    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._pods: dict[str, Entry] = {}
        self._by_label: dict[_Label, dict[str, Entry]] = {}
        self._anti_by_anchor: dict[_Label | None, dict[str, Entry]] = {}
        self._scoring: dict[str, Entry] = {}
        self._node_labels: dict[str, Mapping[str, str]] = {}  # node name -> the labels its entries carry
        self._answers: dict[tuple, _Answer] = {}  # in the order last asked
        self.namespace_labels: Mapping[str, Mapping[str, str]] = namespace_labels or {}

    @classmethod
    def of(cls, nodes: Iterable[NodeInfo],
           namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> PodIndex:
        index = cls(namespace_labels)
        for node in nodes:
            index.learn(None, node)
        return index

    def set_namespace_labels(self, namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.namespace_labels = namespace_labels
        self._answers.clear()

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace, _NO_LABELS)

    # -- upkeep ----------------------------------------------------------------------------------
    def forget(self, old: NodeInfo, new: NodeInfo | None) -> None:
        """Phase one of a changed node: take out the pods of ``old`` (as indexed) that ``new`` (None: the
        node is gone) does not hold as they were; all of them if the node is gone or relabelled."""
        labels = self._node_labels[old.name]
        same = new is not None and new.labels == labels
        kept = new.pods if same else {}  # type: ignore[union-attr]
        for uid, pod in old.pods.items():
            if kept.get(uid) is not pod:
                self._remove(uid, labels, pod)
        if not same:
            del self._node_labels[old.name]

    def learn(self, old: NodeInfo | None, new: NodeInfo) -> None:
        """Phase two of a changed node: index the pods of ``new`` that ``old`` (its previous version, None
        for a new node) did not hold as they are."""
        labels = self._node_labels.get(new.name)
        indexed = old.pods if old is not None and labels is not None else {}
        if labels is None:  # new here, or relabelled (forget took every pod out)
            labels = self._node_labels[new.name] = new.labels
        for uid, pod in new.pods.items():
            if indexed.get(uid) is not pod:
                self._add(uid, labels, pod)

    def holds(self, uid: str) -> bool:
        """Whether a pod of that uid is counted on some node."""
        return uid in self._pods

    def replace_node(self, old: NodeInfo, new: NodeInfo) -> None:
        """One changed node (``new`` standing in for ``old`` as indexed): both phases at once."""
        self.forget(old, new)
        self.learn(old, new)

    def _add(self, uid: str, labels: Mapping[str, str], pod: PodInfo) -> None:
        entry = (labels, pod)
        self._pods[uid] = entry
        for label in pod.labels.items():
            self._by_label.setdefault(label, {})[uid] = entry
        if pod.pod_affinity is not None:
            for key in _anti_affinity_anchors(pod):
                self._anti_by_anchor.setdefault(key, {})[uid] = entry
            if _scores_others(pod):
                self._scoring[uid] = entry
        for answer in self._answers.values():
            answer.count_pod(answer.counts, labels, pod, 1)

    def _remove(self, uid: str, labels: Mapping[str, str], pod: PodInfo) -> None:
        del self._pods[uid]
        for label in pod.labels.items():
            _discard(self._by_label, label, uid)
        if pod.pod_affinity is not None:
            for key in _anti_affinity_anchors(pod):
                _discard(self._anti_by_anchor, key, uid)
            self._scoring.pop(uid, None)
        for answer in self._answers.values():
            answer.count_pod(answer.counts, labels, pod, -1)

    # -- lookups ---------------------------------------------------------------------------------
    def selectable_by(self, selector: LabelSelector) -> Collection[Entry]:
        """The pods ``selector`` may match (a superset: check each)."""
        key = anchor(selector)
        return self._pods.values() if key is None else self._by_label.get(key, _NONE).values()

    def with_label(self, key: str, value: str) -> Collection[Entry]:
        """The counted pods labelled ``key=value``, whatever their namespace."""
        return self._by_label.get((key, value), _NONE).values()

    def scoring_pods(self) -> Iterable[Entry]:
        """Pods with terms that score an incoming pod: required affinity or preferred (anti-)affinity."""
        return self._scoring.values()

    # -- counts ----------------------------------------------------------------------------------
    def matching_all(self, terms: tuple[AffinityTerm, ...]) -> TopologyCounts:
        """For each term's domains, the pods that match every one of ``terms`` (kube-scheduler's
        affinityCounts). Do not modify the result."""
        def count_pod(counts: TopologyCounts, node_labels: Mapping[str, str], pod: PodInfo, sign: int) -> None:
            namespace_labels = self.labels_of_namespace(pod.namespace)
            for term in terms:
                if not term.matches(pod.namespace, pod.labels, namespace_labels):
                    return
            for term in terms:
                _count(counts, node_labels, term.topology_key, sign)

        return self._answer(("all", terms), count_pod, terms[0].selector)

    def matching(self, term: AffinityTerm) -> TopologyCounts:
        """The pods ``term`` matches, by its domains. Do not modify the result."""
        def count_pod(counts: TopologyCounts, node_labels: Mapping[str, str], pod: PodInfo, sign: int) -> None:
            if term.matches(pod.namespace, pod.labels, self.labels_of_namespace(pod.namespace)):
                _count(counts, node_labels, term.topology_key, sign)

        return self._answer(("one", term), count_pod, term.selector)

    def anti_affinity_against(self, namespace: str, labels: Mapping[str, str]) -> TopologyCounts:
        """The domains of pods with a required anti-affinity term matching a pod of ``namespace`` with
        ``labels``, a term counted once per domain it names (kube-scheduler's existingAntiAffinityCounts)."""
        def count_pod(counts: TopologyCounts, node_labels: Mapping[str, str], pod: PodInfo, sign: int) -> None:
            affinity = pod.pod_affinity
            if affinity is None or not affinity.required_anti_affinity:
                return
            namespace_labels = self.labels_of_namespace(namespace)
            for term in affinity.required_anti_affinity:
                if term.matches(namespace, labels, namespace_labels):
                    _count(counts, node_labels, term.topology_key, sign)

        if not self._anti_by_anchor:
            return {}
        candidates: dict[str, Entry] = {}
        for anchor_key in (None, *labels.items()):
            candidates.update(self._anti_by_anchor.get(anchor_key, _NONE))
        return self._answer(("against", namespace, frozenset(labels.items())), count_pod, candidates.values())

    def scores_from_others(self, namespace: str, labels: Mapping[str, str], hard_weight: int) -> TopologyCounts:
        """What existing pods' terms give a pod of ``namespace`` with ``labels``, by domain: each required
        affinity term it matches ``hard_weight`` (when above 0), each preferred affinity term it matches its
        weight, each preferred anti-affinity term minus its weight (InterPodAffinity's score). Do not modify
        the result."""
        def count_pod(counts: TopologyCounts, node_labels: Mapping[str, str], pod: PodInfo, sign: int) -> None:
            affinity = pod.pod_affinity
            if affinity is None:
                return
            namespace_labels = self.labels_of_namespace(namespace)
            if hard_weight > 0:
                for term in affinity.required_affinity:
                    if term.matches(namespace, labels, namespace_labels):
                        _count(counts, node_labels, term.topology_key, sign * hard_weight)
            for weighted in affinity.preferred_affinity:
                if weighted.term.matches(namespace, labels, namespace_labels):
                    _count(counts, node_labels, weighted.term.topology_key, sign * weighted.weight)
            for weighted in affinity.preferred_anti_affinity:
                if weighted.term.matches(namespace, labels, namespace_labels):
                    _count(counts, node_labels, weighted.term.topology_key, -sign * weighted.weight)

        if not self._scoring:
            return {}
        return self._answer(("scored by", namespace, frozenset(labels.items()), hard_weight), count_pod,
                            self._scoring.values())

    def _answer(self, key: tuple, count_pod: CountPod,
                candidates: Collection[Entry] | LabelSelector | None) -> TopologyCounts:
        """The kept answer to ``key``, or one computed from ``candidates`` (a selector: the pods it may
        select; None: no pod)."""
        answer = self._answers.pop(key, None)
        if answer is None:
            if isinstance(candidates, LabelSelector):
                candidates = self.selectable_by(candidates)
            answer = _Answer(count_pod)
            for node_labels, pod in candidates or ():
                count_pod(answer.counts, node_labels, pod, 1)
            if len(candidates or ()) < WORTH_KEEPING:
                return answer.counts
        self._answers[key] = answer  # (re-)inserted: the last asked goes last
        if len(self._answers) > KEPT_ANSWERS:
            del self._answers[next(iter(self._answers))]
        return answer.counts


def _count(counts: TopologyCounts, node_labels: Mapping[str, str], topology_key: str, amount: int) -> None:
    """Add ``amount`` to the domain of ``topology_key`` of the node labelled ``node_labels``, if it has one."""
    value = node_labels.get(topology_key)
    if value is None:
        return
    pair = (topology_key, value)
    total = counts.get(pair, 0) + amount
    if total:
        counts[pair] = total
    else:
        del counts[pair]


def _anti_affinity_anchors(pod: PodInfo) -> set[_Label | None]:
    affinity = pod.pod_affinity
    assert affinity is not None
    # A term without a selector selects no pod: nothing to find it by.
    return {anchor(term.selector) for term in affinity.required_anti_affinity if term.selector is not None}


def _scores_others(pod: PodInfo) -> bool:
    affinity = pod.pod_affinity
    return affinity is not None and bool(affinity.required_affinity or affinity.has_preferred)


def _discard(buckets: dict, key: object, uid: str) -> None:
    bucket = buckets.get(key)
    if bucket is not None:
        bucket.pop(uid, None)
        if not bucket:
            del buckets[key]
