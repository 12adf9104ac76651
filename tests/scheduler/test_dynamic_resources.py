"""DynamicResources through whole scheduling cycles (scheduler.testing.Cycles, kube-scheduler's default profile):
what Reserve holds, what PreBind writes, what Unreserve gives back, claims shared by pods or made from templates,
and the refusals that name a field this scheduler does not implement. The decisions themselves are proved
against recorded kube-scheduler decisions (test_kube_scheduler_dra_corpus.py)."""

from __future__ import annotations

from typing import Any

from scheduler.testing import Cycles, pod_object

SLICES = "resource.k8s.io/v1/resourceslices"
CLASSES = "resource.k8s.io/v1/deviceclasses"
CLAIMS = "resource.k8s.io/v1/resourceclaims"
FINALIZER = "resource.kubernetes.io/delete-protection"


def nodes(*names: str) -> str:
    return "\n---\n".join(f"kind: Node\nmetadata: {{name: {n}, labels: {{zone: z-{n}}}}}\n"
                          f"status: {{allocatable: {{cpu: '8', memory: 16Gi, pods: '110'}}}}" for n in names)


def gpu_slice(node: str, devices: int, **device: Any) -> dict[str, Any]:
    return {"kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}, **device}
                                 for i in range(devices)]}}


GPU_CLASS = {"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def claim(name: str, count: int = 1, device_class: str = "gpu", **exactly: Any) -> dict[str, Any]:
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [{"name": "r0", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count, **exactly}}]}}}


def claiming(name: str, *claims: str, **keywords: Any) -> dict[str, Any]:
    pod = pod_object(name=name, requests={"cpu": "1"}, **keywords)
    pod["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return pod


def simulation(*objects: tuple[str, dict[str, Any]], names: tuple[str, ...] = ("n1",)) -> Cycles:
    given: dict[str, list[dict[str, Any]]] = {SLICES: [], CLASSES: [GPU_CLASS], CLAIMS: []}
    for kind, obj in objects:
        given[kind].append(obj)
    return Cycles(nodes(*names), objects=given)


def failed(sim: Cycles, pod: str) -> str:
    """The last FailedScheduling message, without DefaultPreemption's part (the default profile preempts)."""
    return sim.events_for(pod)[-1].message.split(", preemption: ")[0]


def stored(sim: Cycles, name: str) -> dict[str, Any]:
    return dict(sim.stores[CLAIMS].get_object("default", name) or {})


def devices(sim: Cycles, name: str) -> list[str]:
    results = ((stored(sim, name).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    return [r["device"] for r in results]


def test_reserved_devices_are_not_given_to_the_next_pod_and_prebind_writes_the_claim():
    sim = simulation((SLICES, gpu_slice("n1", 3)), (CLAIMS, claim("a", 2)), (CLAIMS, claim("b", 2)))
    sim.add_pod(claiming("pa", "a"))
    sim.add_pod(claiming("pb", "b"))
    sim.run_until_idle()
    assert sim.placements == {"default/pa": "n1"}
    assert failed(sim, "default/pb") == \
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable"
    writes = [(c.method, c.path, c.body) for c in sim.api.calls if "resourceclaims" in c.path]
    assert [(m, p) for m, p, _ in writes] == [
        ("PATCH", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/a"),
        ("PATCH", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/a/status")]
    assert writes[0][2]["metadata"]["finalizers"] == [FINALIZER]
    status = writes[1][2]["status"]
    assert [r["device"] for r in status["allocation"]["devices"]["results"]] == ["gpu-0", "gpu-1"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "pa", "uid": sim.nodes["n1"].pods[
        next(iter(sim.nodes["n1"].pods))].uid}]
    assert devices(sim, "a") == ["gpu-0", "gpu-1"]  # what was written stands for the claim until the informer


def test_a_failed_prebind_gives_the_devices_back():
    sim = simulation((SLICES, gpu_slice("n1", 2)), (CLAIMS, claim("a", 2)), (CLAIMS, claim("b", 2)))
    sim.api.fail("PATCH", "resourceclaims/a/status", times=100)
    sim.add_pod(claiming("pa", "a"))
    sim.run_until_idle()
    assert sim.placements == {}
    assert "binding claim default/a" in sim.events_for("default/pa")[-1].message
    assert devices(sim, "a") == []  # Unreserve dropped the held allocation
    sim.add_pod(claiming("pb", "b"))
    sim.run_until_idle()
    assert sim.placements == {"default/pb": "n1"}
    assert devices(sim, "b") == ["gpu-0", "gpu-1"]


def test_class_and_claim_configuration_is_carried_into_the_allocation():
    """As kube-scheduler's allocator writes devices.config: the class's entries first (naming the requests that
    used the class, none when all did), then the claim's own."""
    configured = {**GPU_CLASS, "spec": {**GPU_CLASS["spec"], "config": [
        {"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}]}}
    two = claim("a")
    two["spec"]["devices"]["requests"].append({"name": "r1", "exactly": {"deviceClassName": "gpu"}})
    two["spec"]["devices"]["config"] = [
        {"requests": ["r1"], "opaque": {"driver": "gpu.example.com", "parameters": {"r1": True}}},
        {"opaque": {"driver": "gpu.example.com", "parameters": {"all": True}}}]
    sim = Cycles(nodes("n1"), objects={SLICES: [gpu_slice("n1", 2)], CLASSES: [configured], CLAIMS: [two]})
    sim.add_pod(claiming("pa", "a"))
    sim.run_until_idle()
    assert stored(sim, "a")["status"]["allocation"]["devices"]["config"] == [
        {"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}},
        {"source": "FromClaim", "requests": ["r1"], "opaque": {"driver": "gpu.example.com", "parameters": {"r1": True}}},
        {"source": "FromClaim", "opaque": {"driver": "gpu.example.com", "parameters": {"all": True}}}]


def test_a_shared_claim_is_allocated_once_and_its_pods_follow_its_node():
    sim = simulation((SLICES, gpu_slice("n2", 1)), (CLAIMS, claim("shared")), names=("n1", "n2", "n3"))
    sim.add_pod(claiming("first", "shared"))
    sim.run_until_idle()
    assert sim.placements == {"default/first": "n2"}
    sim.add_pod(claiming("second", "shared"))
    sim.run_until_idle()
    assert sim.placements == {"default/first": "n2", "default/second": "n2"}
    assert [r["name"] for r in stored(sim, "shared")["status"]["reservedFor"]] == ["first", "second"]
    allocations = [c for c in sim.api.calls if c.path.endswith("shared/status")]
    assert "allocation" not in allocations[-1].body["status"]  # the second pod only reserves it


def test_a_missing_device_class_is_refused_at_prefilter_in_kube_schedulers_words():
    sim = simulation((SLICES, gpu_slice("n1", 1)), (CLAIMS, claim("a", device_class="tpu")))
    sim.add_pod(claiming("pa", "a"))
    sim.run_until_idle()
    assert failed(sim, "default/pa") == (
        "0/1 nodes are available: request r0: device class tpu does not exist. no new claims to deallocate")
    sim.put_object(CLASSES, {"kind": "DeviceClass", "metadata": {"name": "tpu"},
                             "spec": {"selectors": [{"cel": {"expression": "true"}}]}})
    sim.advance(10)  # past the pod's backoff
    assert sim.placements == {"default/pa": "n1"}  # the new class brought the pod back


def test_a_claim_made_from_a_template_waits_until_the_pod_names_it():
    sim = simulation((SLICES, gpu_slice("n1", 1)))
    pod = pod_object(name="pt", requests={"cpu": "1"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    sim.add_pod(pod)
    sim.run_until_idle()
    assert sim.placements == {}
    assert sim.gated["default/pt"].reason == 'pod "default/pt": ResourceClaim not created yet'


def test_a_claim_made_from_a_template_is_used_once_the_pod_names_it_and_only_if_it_owns_it():
    """The resourceclaim controller's work, written by the test: the claim, owned by the pod, and its name in
    the pod's status.resourceClaimStatuses. A pod naming a claim another pod owns waits at PreEnqueue."""
    made = claim("pt-gpu")
    made["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "pt",
                                            "uid": "uid-default-pt", "controller": True}]
    stranger = claim("other-gpu")
    stranger["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": "uid-x", "controller": True}]
    sim = simulation((SLICES, gpu_slice("n1", 2)), (CLAIMS, made), (CLAIMS, stranger))
    for name, claim_name in (("pt", "pt-gpu"), ("ps", "other-gpu")):
        pod = pod_object(name=name, requests={"cpu": "1"})
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim_name}]}
        sim.add_pod(pod)
    sim.run_until_idle()
    assert sim.placements == {"default/pt": "n1"}
    assert devices(sim, "pt-gpu") == ["gpu-0"]
    assert sim.gated["default/ps"].reason == \
        "ResourceClaim default/other-gpu was not created for pod default/ps (pod is not owner)"


def test_what_this_scheduler_does_not_implement_is_refused_naming_the_field():
    sim = simulation((SLICES, gpu_slice("n1", 1)), (CLAIMS, claim("admin", adminAccess=True)))
    sim.add_pod(claiming("pa", "admin"))
    sim.run_until_idle()
    assert failed(sim, "default/pa") == (
        "0/1 nodes are available: ResourceClaim default/admin: spec.devices.requests[0].exactly.adminAccess: "
        "admin access is not supported by this scheduler. no new claims to deallocate")
    tainted = simulation((SLICES, gpu_slice("n1", 1, taints=[{"key": "broken", "effect": "NoSchedule"}])),
                         (CLAIMS, claim("a")))
    tainted.add_pod(claiming("pa", "a"))
    tainted.run_until_idle()
    assert failed(tainted, "default/pa") == (
        "0/1 nodes are available: ResourceSlice n1-gpu: spec.devices[0].taints: device taints is not supported by "
        "this scheduler. no new claims to deallocate")


def test_pods_without_claims_are_untouched():
    sim = simulation((SLICES, gpu_slice("n1", 1)))
    sim.add_pod(pod_object(name="plain", requests={"cpu": "1"}))
    sim.run_until_idle()
    assert sim.placements == {"default/plain": "n1"}
    assert not [c for c in sim.api.calls if "resourceclaims" in c.path]


def test_a_claim_another_pod_is_allocating_makes_the_pod_wait():
    """Reserve holds a pending allocation until PreBind writes it: a second pod sharing the claim is refused
    meanwhile (kube-scheduler's in-flight allocations), and tried again when the claim changes."""
    from scheduler.framework import ClusterView, ObjectStore
    from scheduler.plugins.dynamic_resources import PLUGIN
    from scheduler.testing import node_info, pod_info

    stores = {kind: ObjectStore(kind) for kind in (SLICES, CLASSES, CLAIMS)}
    stores[SLICES].put(gpu_slice("n1", 1))
    stores[CLASSES].put(GPU_CLASS)
    shared = claim("shared")
    stores[CLAIMS].put(shared)
    stores[CLAIMS].assume({**shared, "status": {"allocation": {"devices": {"results": []}}}}, pending=True)
    node = node_info(name="n1", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"})
    pod = pod_info(claiming("second", "shared"))
    verdict = PLUGIN.filter(pod, node, cluster=ClusterView([node], kinds=stores))
    assert verdict.reasons == ("resource claim default/shared is in the process of being allocated",)
    stores[CLAIMS].restore("default", "shared")
    assert PLUGIN.filter(pod, node, cluster=ClusterView([node], kinds=stores)).ok


def test_a_selector_failing_on_a_device_fails_the_attempt_in_kube_schedulers_words():
    """kube-scheduler's allocator returns an error, not a verdict, for a CEL runtime error (here a device without
    the attribute the class reads): the attempt fails and the pod is retried after backoff."""
    numa = {"kind": "DeviceClass", "metadata": {"name": "numa1"},
            "spec": {"selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].numa == 1'}}]}}
    sim = Cycles(nodes("n1"), objects={SLICES: [gpu_slice("n1", 1)], CLASSES: [numa], CLAIMS: [claim("a", device_class="numa1")]})
    sim.add_pod(claiming("pa", "a"))
    sim.run_until_idle()
    assert sim.events_for("default/pa")[-1].message == (
        'running "DynamicResources" filter plugin: class numa1: selector #0 on device gpu.example.com/n1/gpu-0: '
        "CEL runtime error: no such key: numa")
    assert sim.placements == {}
