"""The volume plugins' verdicts and reason strings, and the refusals of pod fields this scheduler cannot
honour. Cases mirror kube-scheduler's tests where upstream has them (named per test):
pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go (TestVolumeBinding),
volumerestrictions/volume_restrictions_test.go (TestAccessModeConflicts),
volumezone/volume_zone_test.go (TestSingleZone, TestMultiZone)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.extender.service import Extender
from scheduler.framework import ClusterView, Code, Profile, Status, build_profiles
from scheduler.framework.cluster_event import ClusterEvent
from scheduler.model import LENIENT, PodInfo
from scheduler.model.volumes import VolumeStore
from scheduler.plugins import in_tree_registry
from scheduler.runtime.cache import Cache
from scheduler.runtime.eventhandlers import CacheHandlers
from scheduler.runtime.metrics import ExtenderMetrics
from tests.scheduler.builders import (
    claim_obj,
    claim_volume,
    node,
    node_obj,
    on_node,
    pod,
    pod_obj,
    pv_obj,
    storage_class_obj,
)

REGISTRY = in_tree_registry()

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"


def store(*objs: dict[str, Any]) -> VolumeStore:
    return VolumeStore.of(objs)


def verdict(plugin: str, p: PodInfo, n: Any, volumes: VolumeStore) -> Status:
    return REGISTRY[plugin].filter(p, n, cluster=ClusterView([n], volumes=volumes))


def with_claims(*claims: str, name: str = "p", **kwargs: Any) -> PodInfo:
    return pod(name, volumes=[claim_volume(c, f"v{i}") for i, c in enumerate(claims)], **kwargs)


# -- VolumeBinding -------------------------------------------------------------------------------------------
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
WAIT_CLASS = storage_class_obj("wait", "WaitForFirstConsumer")
IMMEDIATE_CLASS = storage_class_obj("now")


@pytest.mark.parametrize(("case", "p", "objs", "code", "reason"), [
    # TestVolumeBinding "pod has not pvcs": nothing to check.
    ("no claims", pod("p"), [], Code.SUCCESS, ""),
    # "all bound"
    ("bound, PV anywhere", with_claims("a"), [claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a")],
     Code.SUCCESS, ""),
    ("bound, PV on this node", with_claims("a"),
     [claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", node_terms=on_node("n"))], Code.SUCCESS, ""),
    # "PVC does not exist"
    ("claim missing", with_claims("a"), [], UNRESOLVABLE, 'persistentvolumeclaim "a" not found'),
    # "Part of PVCs do not exist": the first missing one is named.
    ("second claim missing", with_claims("a", "b"), [claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a")],
     UNRESOLVABLE, 'persistentvolumeclaim "b" not found'),
    # "immediate claims not bound"
    ("immediate unbound", with_claims("a"), [claim_obj("a", storage_class="now"), IMMEDIATE_CLASS],
     UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    ("no class is immediate", with_claims("a"), [claim_obj("a")], UNRESOLVABLE,
     "pod has unbound immediate PersistentVolumeClaims"),
    ("a class that does not exist is immediate", with_claims("a"), [claim_obj("a", storage_class="gone")],
     UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    # A volume named but the binding not completed by the PV controller: prebound, treated as immediate.
    ("prebound, not completed", with_claims("a"),
     [claim_obj("a", volume_name="pv-a", storage_class="wait"), WAIT_CLASS, pv_obj("pv-a")],
     UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    # "bound and unbound unsatisfied": the bound claim's PV is pinned elsewhere.
    ("PV on another node", with_claims("a"),
     [claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", node_terms=on_node("other"))],
     UNRESOLVABLE, "node(s) had volume node affinity conflict"),
    # "PVC bound to non-existent PV" (ErrReasonPVNotExist)
    ("PV missing", with_claims("a"), [claim_obj("a", volume_name="pv-a", bound=True)],
     UNRESOLVABLE, "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"),
    ("claim lost", with_claims("a"), [claim_obj("a", volume_name="pv-a", bound=True, phase="Lost")],
     UNRESOLVABLE, 'persistentvolumeclaim "a" bound to non-existent persistentvolume "pv-a"'),
    ("claim being deleted", with_claims("a"), [claim_obj("a", volume_name="pv-a", bound=True, deleting=True),
                                               pv_obj("pv-a")],
     UNRESOLVABLE, 'persistentvolumeclaim "a" is being deleted'),
])
def test_volume_binding_verdicts(case: str, p: PodInfo, objs: list, code: Code, reason: str) -> None:
    status = verdict("VolumeBinding", p, node("n"), store(*objs))
    assert (status.code, status.reason) == (code, reason), case


def test_wait_for_first_consumer_claim_is_refused_saying_why_and_what_to_do() -> None:
    """kube-scheduler would bind or provision the claim for the chosen node; we bind no volumes, so the pod is
    refused on every node, unresolvable, the claim and class named, with the way out."""
    status = verdict("VolumeBinding", with_claims("a"), node("n"),
                     store(claim_obj("a", storage_class="wait"), WAIT_CLASS))
    assert status.code == UNRESOLVABLE
    assert status.reason == (
        'persistentvolumeclaim "a" is unbound and its StorageClass "wait" binds on first use (volumeBindingMode '
        "WaitForFirstConsumer), which this scheduler does not do: schedule this pod with the default scheduler "
        "(leave spec.schedulerName unset) or run this one as a scheduler extender, or bind the claim first")
    assert REGISTRY["VolumeBinding"].requeue_on & ClusterEvent.PVC_CHANGED  # bound by someone else: retried


def test_generic_ephemeral_volume_uses_the_pods_own_claim() -> None:
    """TestVolumeBinding's ephemeral cases: the claim is <pod>-<volume>, created by the ephemeral volume
    controller and controlled by the pod."""
    p = pod("web", uid="uid-web", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    assert verdict("VolumeBinding", p, node("n"), store()).reason == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"')
    foreign = store(claim_obj("web-scratch", volume_name="pv", bound=True, owner_uid="someone-else"), pv_obj("pv"))
    assert verdict("VolumeBinding", p, node("n"), foreign).reason == (
        "PVC default/web-scratch was not created for pod default/web (pod is not owner)")
    own = store(claim_obj("web-scratch", volume_name="pv", bound=True, owner_uid="uid-web"),
                pv_obj("pv", node_terms=on_node("n")))
    assert verdict("VolumeBinding", p, node("n"), own).ok
    assert verdict("VolumeBinding", p, node("m"), own).reason == "node(s) had volume node affinity conflict"


def test_missing_claim_message_is_kube_schedulers_prefilter_form() -> None:
    """FitError.Error with a PreFilter message: the reason once, not counted per node."""
    result = Profile.default("s").schedule(with_claims("a"), [node("n1"), node("n2")], random.Random(1),
                                           ClusterView([], volumes=store()))
    assert result.node_name is None
    assert result.message == '0/2 nodes are available: persistentvolumeclaim "a" not found.'
    assert result.rejected_by == {"VolumeRestrictions"}  # first in kube-scheduler's order, with the same text
    assert set(result.failures) == {"n1", "n2"}


def test_bound_pv_pins_the_pod_to_its_node() -> None:
    volumes = store(claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", node_terms=on_node("n2")))
    nodes = [node("n1"), node("n2"), node("n3")]
    profile = Profile.default("s")
    for seed in range(5):
        result = profile.schedule(with_claims("a"), nodes, random.Random(seed), ClusterView(nodes, volumes=volumes))
        assert result.node_name == "n2"
    volumes = store(claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", node_terms=on_node("n9")))
    result = profile.schedule(with_claims("a"), nodes, random.Random(1), ClusterView(nodes, volumes=volumes))
    assert result.message == "0/3 nodes are available: 3 node(s) had volume node affinity conflict."


# -- VolumeRestrictions ----------------------------------------------------------------------------------
def test_read_write_once_pod_claim_in_use_anywhere_refuses_every_node() -> None:
    """TestAccessModeConflicts: a ReadWriteOncePod claim another pod uses (counted cluster-wide, as upstream's
    conflictingPVCRefCount) makes every node Unschedulable (evicting that pod frees it); a ReadWriteMany claim
    shared, or a claim of the same name in another namespace, is no conflict."""
    volumes = store(claim_obj("solo", access_modes=("ReadWriteOncePod",), volume_name="pv1", bound=True),
                    claim_obj("shared", access_modes=("ReadWriteMany",), volume_name="pv2", bound=True))

    def nodes_with(claim: str, namespace: str = "default") -> list[Any]:
        # The user is parsed as the cache parses pods on nodes (leniently): its claims are kept too.
        user = PodInfo.from_api(pod_obj("first", namespace=namespace, volumes=[claim_volume(claim)], node_name="n1"),
                                LENIENT)
        return [node("n1", pods_on_it=[user]), node("n2")]

    def verdicts(claim: str, nodes: list[Any]) -> set[tuple[Code, str]]:
        cluster = ClusterView(nodes, volumes=volumes)
        return {(s.code, s.reason) for s in (REGISTRY["VolumeRestrictions"].filter(with_claims(claim), n, cluster=cluster)
                                             for n in nodes)}

    conflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    assert verdicts("solo", nodes_with("solo")) == {(Code.UNSCHEDULABLE, conflict)}  # n2 too
    assert verdicts("shared", nodes_with("shared")) == {(Code.SUCCESS, "")}
    assert verdicts("solo", nodes_with("solo", namespace="other")) == {(Code.SUCCESS, "")}
    assert verdicts("solo", [node("n")]) == {(Code.SUCCESS, "")}  # nobody uses it


# -- VolumeZone ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("pv_labels", "node_labels", "fits"), [
    ({ZONE: "a"}, {ZONE: "a"}, True),
    ({ZONE: "a"}, {ZONE: "b"}, False),
    ({ZONE: "a__b"}, {ZONE: "b"}, True),  # TestMultiZone: "__" separates zones
    ({ZONE: "a"}, {}, True),  # a node with no zone labels is not constrained (single-zone clusters)
    ({ZONE: "a"}, {"topology.kubernetes.io/region": "r"}, False),  # has topology labels, lacks the zone
    ({ZONE_BETA: "a"}, {ZONE: "a"}, True),  # the PV's beta label read against the node's GA label
    ({}, {ZONE: "b"}, True),
])
def test_volume_zone(pv_labels: dict, node_labels: dict, fits: bool) -> None:
    volumes = store(claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", labels=pv_labels))
    status = verdict("VolumeZone", with_claims("a"), node("n", labels=node_labels), volumes)
    expected = (Code.SUCCESS, "") if fits else (UNRESOLVABLE, "node(s) had no available volume zone")
    assert (status.code, status.reason) == expected


# -- what this scheduler cannot honour ------------------------------------------------------------------
FIX = ("schedule this pod with the default scheduler (leave spec.schedulerName unset) or run this one as a "
       "scheduler extender")


@pytest.mark.parametrize(("plugin", "extra", "reason"), [
    ("NodeVolumeLimits", {"volumes": [{"name": "v", "csi": {"driver": "ebs.csi.aws.com"}}]},
     ("spec.volumes[0].csi: this scheduler does not count CSI volumes against the node's attach limit (CSINode "
     f"allocatable) (kube-scheduler's NodeVolumeLimits plugin does); {FIX}")),
    ("VolumeRestrictions", {"volumes": [{"name": "v", "iscsi": {"iqn": "iqn.x", "lun": 0, "targetPortal": "t"}}]},
     ("spec.volumes[0].iscsi: this scheduler does not check two pods using one disk on a node for conflicts "
     f"(kube-scheduler's VolumeRestrictions plugin does); {FIX}")),
])
def test_fields_we_cannot_honour_are_refused_naming_the_field(plugin: str, extra: dict, reason: str) -> None:
    p = pod("p", extra_spec=extra)
    nodes = [node("n1"), node("n2")]
    result = Profile.default("s").schedule(p, nodes, random.Random(1), ClusterView(nodes, volumes=store()))
    assert result.node_name is None
    assert result.rejected_by == {plugin}
    assert result.message == f"0/2 nodes are available: {reason}."
    assert REGISTRY[plugin].filter(p, nodes[0]).code == UNRESOLVABLE


def test_claim_bound_to_a_csi_volume_is_refused() -> None:
    volumes = store(claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", csi_driver="hostpath.csi.k8s.io"))
    status = verdict("NodeVolumeLimits", with_claims("a"), node("n"), volumes)
    assert status.code == UNRESOLVABLE
    assert status.reason.startswith('volume "v0" (claim "a", PV "pv-a", CSI driver hostpath.csi.k8s.io): this '
                                    "scheduler does not count CSI volumes")
    local = store(claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a"))
    assert verdict("NodeVolumeLimits", with_claims("a"), node("n"), local).ok


def test_informers_fill_the_store_as_a_listing_does() -> None:
    objs = [claim_obj("a", volume_name="pv-a", bound=True), pv_obj("pv-a", node_terms=on_node("n")), WAIT_CLASS]
    handlers = CacheHandlers(Cache())
    handlers.claim_changed(objs[0])
    handlers.volume_changed(objs[1])
    handlers.storage_class_changed(objs[2])
    fed, listed = handlers.cache.volumes, VolumeStore.of([*objs, node_obj("n")])
    assert (fed.claims, fed.volumes, fed.classes) == (listed.claims, listed.volumes, listed.classes)


def test_storage_events_only_when_what_plugins_read_changed() -> None:
    handlers = CacheHandlers(Cache())
    claim = claim_obj("a", storage_class="wait")
    assert handlers.claim_changed(claim) is True
    assert handlers.claim_changed({**claim, "status": {"phase": "Pending", "capacity": {}}}) is False
    assert handlers.claim_changed(claim_obj("a", storage_class="wait", volume_name="pv", bound=True)) is True
    handlers.claim_deleted(claim)
    assert handlers.cache.volumes.claim("default", "a") is None


def test_an_extender_leaves_volumes_and_refused_fields_to_kube_scheduler() -> None:
    """Called by kube-scheduler, which binds volumes and honours these fields itself (its filters run first),
    the extender neither refuses a pod with an unbound WaitForFirstConsumer claim nor one with DRA claims."""
    nodes = [node_obj("n1"), node_obj("n2")]
    cache = Cache()
    for obj in nodes:
        CacheHandlers(cache).node_changed(obj)
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "my-custom-scheduler"}]}
    extender = Extender(cache, build_profiles(parse_config(cfg)), ExtenderMetrics())
    for extra in ({"volumes": [claim_volume("data")]}, {"resourceClaims": [{"name": "gpu"}]}):
        body = json.dumps({"Pod": pod_obj(extra_spec=extra), "Nodes": None, "NodeNames": ["n1", "n2"]}).encode()
        code, answer = extender.handle("/scheduler/filter", body)
        assert code == 200
        assert json.loads(answer)["NodeNames"] == ["n1", "n2"], extra


def test_claim_class_is_the_beta_annotation_first() -> None:
    """GetPersistentVolumeClaimClass: the volume.beta.kubernetes.io/storage-class annotation, when present
    (even empty), wins over spec.storageClassName."""
    obj = claim_obj("a", storage_class="wait")
    obj["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": ""}
    status = verdict("VolumeBinding", with_claims("a"), node("n"), store(obj, WAIT_CLASS))
    assert status.reason == "pod has unbound immediate PersistentVolumeClaims"  # no class: Immediate
