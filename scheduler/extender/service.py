"""The extender's answers: a profile's filter and score plugins run for the nodes kube-scheduler sends.

- filter: the profile's enabled filter plugins over every node given (kube-scheduler has already sampled
  them: no percentageOfNodesToScore here). A node rejected with UnschedulableAndUnresolvable (NetworkAware,
  TaintToleration, NodeAffinity...) goes to FailedAndUnresolvableNodes, so kube-scheduler does not try
  preemption for it; any other rejection to FailedNodes. The text is the plugin's reason, which
  kube-scheduler counts into its FailedScheduling message ("2 node(s) didn't have label ...").
- prioritize: the profile's score plugins, normalised and weighted as in standalone mode
  (``Profile.score_nodes``), each node's total then normalised as kube-scheduler's DefaultNormalizeScore
  does, to MaxExtenderPriority: the best total gets 10, the others 10 x total / best, rounded down.
  kube-scheduler multiplies it back by 10 and by the extender's weight.
- Nodes: by name (nodeCacheCapable) from the cache the standalone scheduler keeps (nodes and pods through
  list+watch); a name the cache does not know is FailedAndUnresolvable for filter ("node(s) not found in
  the extender's cache": preempting pods cannot make it known) and scores 0. As Node objects (not
  nodeCacheCapable): the given object, with the pods the cache counts on that node; a node whose
  resourceVersion equals the cache's is the cache's own NodeInfo (the same object, pods already counted).
- Profile: the one named by the pod's spec.schedulerName, else the configuration's first profile
  (kube-scheduler calls its extenders for every profile it serves), minus the volume and DRA filters
  (``plugins.KUBE_SCHEDULER_DOES``): kube-scheduler binds the pod's volumes and allocates its claims itself,
  and the fields this scheduler refuses standalone (``PodInfo.unsupported``) are kube-scheduler's to honour.
- A pod our plugins cannot read (a malformed quantity, an annotation value NetworkAware refuses): filter
  answers with Error (kube-scheduler reports it on the pod), prioritize with 400.
- Before both caches have synced every verb answers 503: an empty cache would reject every node.

Pods kube-scheduler has assumed but not yet bound are not in this cache (they reach it once bound): with
NodeResourcesFit or LeastLoaded enabled here, back-to-back decisions may count a node emptier than
kube-scheduler does. kube-scheduler's own filters, which run first, see them.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping

from scheduler.extender import protocol
from scheduler.extender.protocol import MAX_EXTENDER_PRIORITY, ExtenderArgs, ExtenderArgsError
from scheduler.framework import MAX_NODE_SCORE, ClusterView, Code, Profile, default_normalize
from scheduler.model import STRICT, NodeInfo, PodInfo, PodSpecError
from scheduler.plugins import KUBE_SCHEDULER_DOES
from scheduler.runtime.cache import Cache
from scheduler.runtime.informer import object_key
from scheduler.runtime.metrics import ExtenderMetrics

log = logging.getLogger(__name__)

VERBS = ("filter", "prioritize")
UNKNOWN_NODE = "node(s) not found in the extender's cache"
# kube-scheduler sends the same pod to filter and then to prioritize (and again on a retry): its PodInfo is
# read once per version of the pod (uid and resourceVersion) and kept for the next verb, for this many pods.
PREPARED_PODS = 256


class Extender:
    """Answers filter and prioritize requests (bytes in, status and bytes out) from ``cache`` with
    ``profiles``. Thread-safe: requests may arrive on several connections at once."""

    def __init__(self, cache: Cache, profiles: Mapping[str, Profile], metrics: ExtenderMetrics,
                 synced: Callable[[], bool] = lambda: True) -> None:
        if not profiles:
            raise ValueError("an extender needs at least one profile")
        self.cache = cache
        self.profiles = {name: profile.without(KUBE_SCHEDULER_DOES) for name, profile in profiles.items()}
        self.default_profile = next(iter(self.profiles.values()))
        self.metrics = metrics
        self.synced = synced
        self._snapshot_lock = threading.Lock()
        self._prepared: dict[tuple[str, str], PodInfo] = {}  # oldest first

    def handle(self, path: str, body: bytes) -> tuple[int, bytes]:
        """One POST to ``<urlPrefix>/<verb>`` (any urlPrefix path): the HTTP status and the JSON answer."""
        verb = path.rstrip("/").rpartition("/")[2]
        if verb not in VERBS:
            return 404, protocol.error_body(f"no extender verb {verb!r} here: this extender serves "
                                            f"{' and '.join(VERBS)} (set filterVerb/prioritizeVerb to those)")
        start = time.perf_counter()
        code, answer = self._answer(verb, body)
        self.metrics.requests.labels(verb, str(code)).inc()
        self.metrics.request_duration.labels(verb).observe(time.perf_counter() - start)
        return code, answer

    def _answer(self, verb: str, body: bytes) -> tuple[int, bytes]:
        if not self.synced():
            return 503, protocol.error_body("the extender's node and pod caches have not synced yet; "
                                            "it answers once they have")
        args = None
        try:
            args = protocol.parse_args(body)
            pod = self._prepare(args.pod)
            return 200, self.filter(pod, args) if verb == "filter" else self.prioritize(pod, args)
        except ExtenderArgsError as err:
            log.warning("%s: malformed request: %s", verb, err)
            return 400, protocol.error_body(f"malformed {verb} request: {err}")
        except PodSpecError as err:
            message = f"invalid pod spec: {err.field}: {err.reason}"
            log.warning("%s %s: %s", verb, object_key(args.pod) if args else "?", message)
            if verb == "filter":
                return 200, protocol.filter_error(message)
            return 400, protocol.error_body(message)
        except Exception:  # a bug must cost one answer, not the connection kube-scheduler reuses
            log.exception("%s: answering failed", verb)
            return 500, protocol.error_body(f"the extender failed answering {verb}; see its log")

    def _prepare(self, obj: protocol.Obj) -> PodInfo:
        """The pod as plugins read it, from the PodInfo of an earlier verb for the same version of it."""
        meta = obj["metadata"]
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if all(key) and (pod := self._prepared.get(key)) is not None:
            return pod
        pod = dataclasses.replace(PodInfo.from_api(obj, STRICT), unsupported=())
        if all(key):
            with self._snapshot_lock:  # requests arrive on several connections at once
                self._prepared[key] = pod
                while len(self._prepared) > PREPARED_PODS:
                    del self._prepared[next(iter(self._prepared))]
        return pod

    def filter(self, pod: PodInfo, args: ExtenderArgs) -> bytes:
        with self._snapshot_lock:
            known, unknown, cluster = self._nodes(args)
            passing, failures = self._profile(pod).filter_nodes(pod, known, cluster)
        failed: dict[str, str] = {}
        unresolvable = dict.fromkeys(unknown, UNKNOWN_NODE)
        # Nodes a plugin rejects alike share one Status (a pre_filter's rejection): read each once.
        read: dict[int, tuple[dict[str, str], str]] = {}
        for name, status in failures.items():
            if (known_status := read.get(id(status))) is None:
                target = unresolvable if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
                known_status = read[id(status)] = (target, status.reason)
            known_status[0][name] = known_status[1]
        log.debug("filter %s: %d of %d nodes pass", pod.key, len(passing), len(args.names))
        return protocol.filter_result(args, [n.name for n in passing], failed, unresolvable)

    def prioritize(self, pod: PodInfo, args: ExtenderArgs) -> bytes:
        with self._snapshot_lock:
            known, _, cluster = self._nodes(args)
            totals, _ = self._profile(pod).score_nodes(pod, known, cluster)
        default_normalize(totals)  # the best total -> MAX_NODE_SCORE, then down to the extender's range
        step = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        log.debug("prioritize %s: %d nodes scored", pod.key, len(known))
        if len(known) == len(args.names):  # every node known: scores are in request order
            return protocol.host_priorities(zip(args.names, [total // step for total in totals], strict=True))
        scores = {node.name: total // step for node, total in zip(known, totals, strict=True)}
        return protocol.host_priorities((name, scores.get(name, 0)) for name in args.names)

    def _profile(self, pod: PodInfo) -> Profile:
        return self.profiles.get(pod.scheduler_name, self.default_profile)

    def _nodes(self, args: ExtenderArgs) -> tuple[list[NodeInfo], list[str], ClusterView]:
        """The NodeInfos to decide on, in request order, the names the cache does not know, and the whole
        cache as plugins that read the cluster see it (topology spread's counts, the affinity pod index).
        Called with ``_snapshot_lock`` held until the answer is computed: the snapshot and its pod index
        are refreshed in place, and the index keeps answers between reads."""
        snapshot = self.cache.snapshot()
        cached = list(map(snapshot.by_name.get, args.names))
        if args.node_objects is None:
            nodes = [info for info in cached if info is not None]
            unknown = [name for name, info in zip(args.names, cached, strict=True) if info is None] \
                if len(nodes) < len(cached) else []
            # Every node of the cache, each once (kube-scheduler sends all that passed its own filters, often
            # all): the snapshot's own traits count them, no recount per request.
            if len(nodes) == len(snapshot.nodes) and len(set(args.names)) == len(nodes):
                return nodes, unknown, ClusterView(snapshot.nodes, snapshot.namespace_labels, snapshot.pod_index,
                                                   traits=snapshot.traits)
        else:
            nodes = [_from_object(obj, info, i) for i, (obj, info) in enumerate(zip(args.node_objects, cached,
                                                                                    strict=True))]
            unknown = []
        # The traits of the nodes decided on (plugins skip a pass by them), not of the cache: the node
        # objects kube-scheduler sends may be newer than the cache's. Counted only if a plugin reads them.
        cluster = ClusterView(snapshot.nodes, snapshot.namespace_labels, snapshot.pod_index, traits_of=nodes)
        return nodes, unknown, cluster


def _from_object(obj: protocol.Obj, cached: NodeInfo | None, i: int) -> NodeInfo:
    """The NodeInfo of a Node object kube-scheduler sent, counting the pods the cache holds for it."""
    version = obj["metadata"].get("resourceVersion")
    if cached is not None and version and cached.resource_version == str(version):
        return cached
    try:
        info = NodeInfo.from_api(obj)
    except (AttributeError, TypeError, ValueError) as err:  # a field of the wrong type somewhere in it
        raise ExtenderArgsError(f"Nodes.items[{i}] ({obj['metadata']['name']}): not a readable core/v1 Node: "
                            f"{err}") from None
    for pod in cached.pods.values() if cached is not None else ():
        info.add_pod(pod)
    return info
