"""DynamicResources: kube-scheduler 1.36's plugin of the same name (pkg/scheduler/framework/plugins/
dynamicresources) for pods with DRA ResourceClaims (``spec.resourceClaims``, resource.k8s.io/v1 with
structured parameters): it finds devices for the pod's claims on each node and, for the chosen node, writes
the allocation to the claims before the pod is bound. The device search is ``scheduler.dra``'s.

- PreEnqueue: a pod whose claims do not all exist yet (one named directly, or one a ResourceClaimTemplate
  makes, named in ``status.resourceClaimStatuses``) waits out of the queue.
- PreFilter: the pod's claims, in order; a missing claim, one being deleted, one in use by as many pods as a
  claim allows, one another pod is allocating, a DeviceClass that does not exist ("request r0: device class X
  does not exist") refuse the pod whatever the node. So does anything of the DRA API this scheduler does not
  implement (admin access, device taints, consumable capacity, partitionable devices, binding conditions),
  with a reason naming the object and field.
- Filter: a claim already allocated must be usable on the node (its allocation's node selector); the others
  must all be allocatable there ("cannot allocate all claims" otherwise, whatever the cause).
- Score: 0 unless a claim has a ``firstAvailable`` request; then 8 minus the index of the subrequest the
  node's allocation uses, per request, normalised so the best node has 100.
- Reserve: the allocation found for the chosen node is held (an assumed, pending version of each claim in the
  claims' store) so the next pod's search sees those devices taken; Unreserve gives it back.
- PreBind: for each claim not yet reserved for the pod, the finalizer ``resource.kubernetes.io/delete-protection``,
  then ``status.allocation`` (new allocations) and the pod in ``status.reservedFor``, through the API; the
  answers stand for the claims until the informer delivers them.
- PostFilter: kube-scheduler's text, which ends every FailedScheduling message: "still not schedulable" for a
  pod with claims, "no new claims to deallocate" without (or when PreFilter refused it).

A claim shared by several pods (named by each) is allocated by the first and only reserved by the others,
which must fit its allocation's node selector. Pods are retried when a claim, class or slice changes, a node
is added or its labels or allocatable change, or the pod's ``status.resourceClaimStatuses`` changes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler.dra.allocator import Allocation, AllocationError, Allocator
from scheduler.dra.inventory import claim_named, classes_of, in_use_of, inventory_of
from scheduler.dra.model import FINALIZER, MAX_RESERVED_FOR, MAX_SUBREQUESTS, Claim, DeviceClass
from scheduler.framework import (
    ApiCallError,
    Args,
    ClusterEvent,
    ClusterView,
    Code,
    CycleState,
    Handle,
    ObjectStore,
    Plugin,
    PluginFailure,
    Status,
    default_normalize,
)
from scheduler.model import NodeInfo, PodInfo
from scheduler.model.affinity import NodeSelector, parse_node_selector
from scheduler.model.parsing import PodSpecError

NAME = "DynamicResources"
SLICES = "resource.k8s.io/v1/resourceslices"
CLASSES = "resource.k8s.io/v1/deviceclasses"
CLAIMS = "resource.k8s.io/v1/resourceclaims"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
STILL_NOT_SCHEDULABLE = "still not schedulable"  # its PostFilter for a pod with claims, preemption off
NO_CLAIMS = "no new claims to deallocate"  # its PostFilter for a pod without claims
NO_STATE = "not found"  # its PostFilter when its PreFilter never ran: an error, which ends the PostFilters


class DynamicResourcesArgs(Args):
    """kube-scheduler's DynamicResourcesArgs. Accepted as kube-scheduler's completed configuration writes them;
    this scheduler's search has no time limit (``filterTimeout``) and it does not wait for device binding
    conditions (``bindingTimeout``)."""

    filterTimeout: str | None = None
    bindingTimeout: str | None = None


def _refuse(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), NAME)


# ---- which claims a pod uses ----------------------------------------------------------------------------------

def claim_names(pod: PodInfo) -> list[tuple[str, bool]] | str:
    """(claim name, made from a template) for each of the pod's ``spec.resourceClaims`` with a claim, in order,
    or why one is missing. A template's claim is the one ``status.resourceClaimStatuses`` names; an entry
    there without a name means no claim was needed, and it is skipped."""
    statuses = dict(pod.resource_claim_statuses)
    names: list[tuple[str, bool]] = []
    for ref in pod.resource_claims:
        if ref.claim_name:
            names.append((ref.claim_name, False))
        elif ref.template_name:
            made = statuses.get(ref.name)
            if made is None:
                return f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'
            if made:
                names.append((made, True))
        else:
            return (f'pod "{pod.namespace}/{pod.name}", spec.resourceClaims {ref.name!r}: '
                    "neither resourceClaimName nor resourceClaimTemplateName is set")
    return names


def has_claims(pod: PodInfo) -> bool:
    return bool(pod.resource_claims)


def reserved_for(claim: Claim, pod: PodInfo) -> bool:
    for ref in claim.reserved_for:
        if ref.get("resource") == "pods" and (ref.get("uid") == pod.uid if ref.get("uid") and pod.uid
                                              else ref.get("name") == pod.name):
            return True
    return False


def pod_claims(pod: PodInfo, claims: ObjectStore) -> list[Claim] | str:
    """The pod's claims as the store holds them (assumed versions included), or why it cannot be tried yet."""
    names = claim_names(pod)
    if isinstance(names, str):
        return names
    found = []
    for name, from_template in names:
        claim = claim_named(claims, pod.namespace, name)
        if claim is None:
            return f'resourceclaim "{name}" not found'
        if isinstance(claim, str):
            return claim
        if claim.deleting:
            return f'resourceclaim "{name}" is being deleted'
        if from_template and pod.uid not in claim.owners:
            return (f"ResourceClaim {claim.key} was not created for pod {pod.namespace}/{pod.name} "
                    "(pod is not owner)")
        found.append(claim)
    return found


# ---- PreFilter / Filter ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class DraState:
    """One pod's cycle: its claims, where each allocated one may be used, and the search for the others."""

    claims: list[Claim]
    available_on: list[NodeSelector | None]
    to_allocate: list[int]  # indices into claims, in order
    allocator: Allocator | None
    scored: dict[str, list[Allocation]] = field(default_factory=dict)

    def allocate(self, node: NodeInfo) -> list[Allocation] | None:
        """The allocations of the claims to allocate on ``node`` (None: none), or PluginFailure."""
        if self.allocator is None:
            return []
        try:
            return self.allocator.allocate(node.name, node.labels)
        except AllocationError as err:
            raise PluginFailure(str(err)) from None


def pre_filter(pod: PodInfo, args: DynamicResourcesArgs, cluster: ClusterView) -> DraState | Status | None:
    if not has_claims(pod):
        return None
    claims_store = cluster.objects(CLAIMS)
    claims = pod_claims(pod, claims_store)
    if isinstance(claims, str):
        return _refuse(claims)
    if not claims:
        return None
    classes: dict[str, DeviceClass | str] | None = None
    available_on: list[NodeSelector | None] = []
    to_allocate: list[int] = []
    for index, claim in enumerate(claims):
        if claim.unsupported:
            return _refuse(str(claim.unsupported[0]))
        if claim.allocation is not None and not claims_store.pending(claim.namespace, claim.name):
            if len(claim.reserved_for) >= MAX_RESERVED_FOR and not reserved_for(claim, pod):
                return _refuse(IN_USE)
            raw_selector = claim.allocation.get("nodeSelector")
            try:
                available_on.append(parse_node_selector(raw_selector, "status.allocation.nodeSelector")
                                    if raw_selector else None)
            except PodSpecError as err:
                raise PluginFailure(f"ResourceClaim {claim.key}: {err.field}: {err.reason}") from None
            continue
        available_on.append(None)
        if claims_store.pending(claim.namespace, claim.name):
            return _refuse(f"resource claim {claim.key} is in the process of being allocated")
        to_allocate.append(index)
        if classes is None:
            classes = classes_of(cluster.objects(CLASSES))
        for req in claim.requests:
            options = [(req.name, req.exactly)] if req.exactly is not None else \
                [(r.full_name, r) for r in req.alternatives]
            if not options:
                raise PluginFailure(f"resource claim {claim.key}, request {req.name}: unknown request type")
            for name, request in options:
                if not request.class_name:
                    raise PluginFailure(f"request {name}: unsupported request type")
                found = classes.get(request.class_name)
                if found is None:
                    return _refuse(f"request {name}: device class {request.class_name} does not exist")
                if isinstance(found, str):
                    raise PluginFailure(found)
    allocator = None
    if to_allocate:
        inventory = inventory_of(cluster.objects(SLICES))
        if inventory.unsupported:
            return _refuse(str(inventory.unsupported[0]))
        if inventory.errors:
            raise PluginFailure(inventory.errors[0])
        assert classes is not None
        allocator = Allocator([claims[i] for i in to_allocate],
                              {k: v for k, v in classes.items() if isinstance(v, DeviceClass)},
                              in_use_of(claims_store), inventory)
    return DraState(claims, available_on, to_allocate, allocator)


def filter_node(state: DraState, node: NodeInfo) -> Status | None:
    unavailable = any(s is not None and not s.matches(node.name, node.labels) for s in state.available_on)
    if state.allocate(node) is None:
        return _refuse(CANNOT_ALLOCATE)
    if unavailable:
        return _refuse(NOT_AVAILABLE)
    return None


# ---- Score ----------------------------------------------------------------------------------------------------

def _subrequest_score(claim: Claim, subrequests: set[str]) -> int:
    score = 0
    for req in claim.requests:
        for i, sub in enumerate(req.alternatives):
            if sub.full_name in subrequests:
                score += MAX_SUBREQUESTS - i
    return score


def _allocated_subrequests(claim: Claim) -> set[str]:
    results = ((claim.allocation or {}).get("devices") or {}).get("results") or ()
    return {str(r.get("request")) for r in results if "/" in str(r.get("request"))}


def pre_score(pod: PodInfo, args: DynamicResourcesArgs, cluster: ClusterView,
              feasible: Sequence[NodeInfo]) -> DraState | None:
    """The state to score with, or None (every node 0) unless a claim has a firstAvailable request."""
    if not has_claims(pod):
        return None
    state = pre_filter(pod, args, cluster)
    if not isinstance(state, DraState) or not any(r.alternatives for c in state.claims for r in c.requests):
        return None
    return state


def score_node(state: DraState, node: NodeInfo) -> int:
    allocations = state.scored.get(node.name)
    if allocations is None:
        allocations = state.scored[node.name] = state.allocate(node) or []
    by_claim = dict(zip(state.to_allocate, allocations, strict=False))
    score = 0
    for index, claim in enumerate(state.claims):
        allocation = by_claim.get(index)
        subrequests = allocation.subrequests() if allocation is not None else _allocated_subrequests(claim)
        score += _subrequest_score(claim, subrequests)
    return score


def normalize(scores: list[int], args: DynamicResourcesArgs) -> None:
    default_normalize(scores)


# ---- PostFilter -----------------------------------------------------------------------------------------------

def post_filter_message(pod: PodInfo, pre_filter_rejection: Status | None) -> tuple[str, bool]:
    """What kube-scheduler's DynamicResources PostFilter says for a pod no node fits, and whether the
    PostFilter plugins after it (preemption) still run. When an earlier plugin's PreFilter refused the pod,
    its own never ran: the PostFilter finds no state and fails with an error, and preemption does not run
    (kube-scheduler's RunPostFilterPlugins). When its own PreFilter refused the pod, or the pod's entries name
    no claim (templates that needed none), it recorded no claims."""
    if pre_filter_rejection is not None:
        if pre_filter_rejection.plugin != NAME:
            return NO_STATE, False
        return NO_CLAIMS, True
    names = claim_names(pod) if has_claims(pod) else []
    return (STILL_NOT_SCHEDULABLE if names else NO_CLAIMS), True


# ---- Reserve, Unreserve, PreBind ------------------------------------------------------------------------------

def _claim_path(claim: Claim, status: bool = False) -> str:
    tail = "/status" if status else ""
    return f"/apis/resource.k8s.io/v1/namespaces/{claim.namespace}/resourceclaims/{claim.name}{tail}"


@dataclass(slots=True)
class _Held:
    """What Reserve decided for one pod: its claims, and the allocation of each claim it allocates."""

    claims: list[Claim]
    allocations: dict[int, Allocation]


class DynamicResourcesPoints:
    """The points outside filter and score, made once per profile with the handle."""

    def __init__(self, args: DynamicResourcesArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    @property
    def _claims(self) -> ObjectStore:
        return self.handle.objects(CLAIMS)

    def concerns(self, pod: PodInfo) -> bool:
        """Reserve and PreBind have nothing to do for a pod without claims: it is bound the plain way."""
        return has_claims(pod)

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not has_claims(pod):
            return None
        found = pod_claims(pod, self._claims)
        return Status(Code.UNSCHEDULABLE, (found,)) if isinstance(found, str) else None

    def reserve(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        if not has_claims(pod) or cycle.cluster is None:
            return None
        state = pre_filter(pod, self.args, cycle.cluster)
        if state is None:
            return None
        if isinstance(state, Status):
            return state
        allocations: list[Allocation] | None = []
        if state.to_allocate:
            chosen = next((n for n in cycle.cluster.nodes if n.name == node), None)
            if chosen is None:
                return Status(Code.ERROR, (f"node {node} is not in the snapshot",))
            allocations = state.allocate(chosen)
            if allocations is None:
                return Status(Code.ERROR, ("claim allocation not found for node",))
        held = _Held(state.claims, dict(zip(state.to_allocate, allocations, strict=True)))
        cycle[NAME] = held
        store = self._claims
        for index, allocation in held.allocations.items():
            claim = state.claims[index]
            assumed = copy.deepcopy(dict(claim.raw))
            meta = assumed.setdefault("metadata", {})
            if FINALIZER not in (meta.get("finalizers") or []):
                meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
            assumed.setdefault("status", {})["allocation"] = allocation.status()
            store.assume(assumed, pending=True)
        return None

    def unreserve(self, cycle: CycleState, pod: PodInfo, node: str) -> None:
        held = cycle.get(NAME)
        if not isinstance(held, _Held):
            return
        store = self._claims
        for claim in held.claims:
            if store.pending(claim.namespace, claim.name):
                store.restore(claim.namespace, claim.name)
            current = claim_named(store, claim.namespace, claim.name)
            if isinstance(current, Claim) and current.allocation is not None and reserved_for(current, pod):
                keep = [dict(r) for r in current.reserved_for if not (r.get("uid") == pod.uid and pod.uid)
                        and not (not pod.uid and r.get("name") == pod.name)]
                try:
                    self.handle.api.request("PATCH", _claim_path(current, status=True),
                                            {"metadata": {"uid": current.uid} if current.uid else {},
                                             "status": {"reservedFor": keep or None}})
                except ApiCallError:
                    pass  # tried again when the pod is
        cycle.pop(NAME, None)

    def pre_bind(self, cycle: CycleState, pod: PodInfo, node: str) -> Status | None:
        held = cycle.get(NAME)
        if not isinstance(held, _Held):
            return None
        store = self._claims
        me = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        for index, claim in enumerate(held.claims):
            if reserved_for(claim, pod):
                continue
            allocation = held.allocations.get(index)
            expected = copy.deepcopy(dict(claim.raw))
            status: dict[str, Any] = {"reservedFor": [*[dict(r) for r in claim.reserved_for], me]}
            if allocation is not None:
                status["allocation"] = {**allocation.status(),
                                        "allocationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
            try:
                if allocation is not None and FINALIZER not in claim.finalizers:
                    meta = expected.setdefault("metadata", {})
                    meta["finalizers"] = [*claim.finalizers, FINALIZER]
                    self.handle.api.request("PATCH", _claim_path(claim), {"metadata": {
                        "finalizers": meta["finalizers"], **({"uid": claim.uid} if claim.uid else {})}})
                answer = self.handle.api.request("PATCH", _claim_path(claim, status=True), {"status": status})
            except ApiCallError as err:
                if store.pending(claim.namespace, claim.name):
                    store.restore(claim.namespace, claim.name)
                return Status(Code.ERROR, (f"binding claim {claim.key}: {err.message or err.reason}",))
            # What the server answered stands for the claim until the informer delivers it (or what was
            # written, when the answer is not the whole object), replacing the pending version at once: the
            # devices never look free to the scheduling loop meanwhile.
            whole = isinstance(answer, Mapping) and answer.get("metadata") and answer.get("spec")
            store.assume(answer if whole else {**expected, "status": {**(expected.get("status") or {}), **status}})
        return None


PLUGIN = Plugin(
    NAME, args=DynamicResourcesArgs, pre_filter=pre_filter, filter_node=filter_node, reads_cluster=True,
    pre_score=pre_score, score_node=score_node, normalize=normalize,
    post_filter_note=post_filter_message, setup=DynamicResourcesPoints,
    requeue_on=ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.NODE_ALLOCATABLE_CHANGED,
    requeue_on_fields=("pod.status.resourceClaimStatuses",),
    watches=(SLICES, CLASSES, CLAIMS),
    writes=(CLAIMS, f"{CLAIMS}/status"),
)
