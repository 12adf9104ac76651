"""Pod and node parsing: effective requests, errors that name the field, the lenient policy for bound pods,
condition taints, and NodeInfo accounting."""

from __future__ import annotations

import pytest

from scheduler.model import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    LENIENT,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
    NodeInfo,
    PodInfo,
    PodSpecError,
    Taint,
    Toleration,
)
from tests.scheduler.builders import node, node_obj, pod, pod_obj, required_affinity

MI = 2**20
REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def c(name: str, requests: dict | None = None, limits: dict | None = None, **extra) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "x", "resources": resources, **extra}


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "cpu", "memory"),
    [
        # containers add up
        ([c("a", {"cpu": "100m", "memory": "64Mi"}), c("b", {"cpu": "200m", "memory": "32Mi"})], None, None,
         300, 96 * MI),
        # an init container bigger than the sum sets the request
        ([c("a", {"cpu": "100m"})], [c("i", {"cpu": "1", "memory": "1Gi"})], None, 1000, 1024 * MI),
        # init containers run one at a time: the max, not the sum
        ([c("a", {"cpu": "100m"})], [c("i1", {"cpu": "500m"}), c("i2", {"cpu": "700m"})], None, 700, 0),
        # overhead is added on top
        ([c("a", {"cpu": "100m", "memory": "10Mi"})], None, {"cpu": "250m", "memory": "120Mi"}, 350, 130 * MI),
        # a sidecar (restartable init container) keeps running: added to the containers, and counted
        # under every later init container
        ([c("a", {"cpu": "100m"})],
         [c("side", {"cpu": "200m"}, restartPolicy="Always"), c("i", {"cpu": "500m"})], None, 700, 0),
        # only limits given: the request is the limit (API defaulting)
        ([c("a", None, {"cpu": "2", "memory": "1Gi"})], None, None, 2000, 1024 * MI),
        # request given, limit bigger: the request counts
        ([c("a", {"cpu": "1"}, {"cpu": "2"})], None, None, 1000, 0),
        # nothing requested
        ([c("a")], None, None, 0, 0),
    ],
)
def test_effective_requests(containers, init, overhead, cpu, memory):
    p = pod(containers=containers, init_containers=init, overhead=overhead)
    assert p.requests.milli_cpu == cpu
    assert p.requests.memory == memory
    assert p.requests.pods == 1


def test_extended_and_ephemeral_requests():
    p = pod(requests={"nvidia.com/gpu": "2", "ephemeral-storage": "1Gi", "hugepages-2Mi": "4Mi"})
    assert p.requests.scalar == {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * MI}
    assert p.requests.ephemeral_storage == 1024 * MI


def test_non_zero_requests_for_scoring():
    p = pod(containers=[c("a"), c("b", {"cpu": "300m", "memory": "1Mi"})])
    assert p.requests.milli_cpu == 300
    assert p.non_zero_milli_cpu == DEFAULT_MILLI_CPU_REQUEST + 300
    assert p.non_zero_memory == DEFAULT_MEMORY_REQUEST + MI


def test_pod_fields():
    obj = pod_obj("web", namespace="shop", uid="u-1", annotations={"a": "b"}, node_selector={"disk": "ssd"},
                  tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
                  host_ports=[8080])
    obj["metadata"].update(resourceVersion="42", creationTimestamp="2026-01-01T00:00:00Z", labels={"app": "web"})
    obj["spec"]["priority"] = 1000
    p = PodInfo.from_api(obj)
    assert (p.key, p.uid, p.resource_version, p.priority) == ("shop/web", "u-1", "42", 1000)
    assert p.scheduler_name == "my-custom-scheduler" and p.node_name is None and p.phase == "Pending"
    assert p.labels == {"app": "web"} and p.annotations == {"a": "b"} and p.node_selector == {"disk": "ssd"}
    assert p.tolerations == (Toleration("k", "Exists", "", "NoSchedule", 5),)
    assert p.host_ports == frozenset({("TCP", "0.0.0.0", 8080)})
    assert p.creation_timestamp == "2026-01-01T00:00:00Z" and p.deletion_timestamp is None
    assert not hasattr(p, "__dict__")  # slotted: no stray per-pod dict, and no raw object kept


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (pod_obj(requests={"cpu": "lots"}), "spec.containers[0].resources.requests.cpu"),
        (pod_obj(containers=[c("a"), c("b", None, {"memory": "1GB"})]), "spec.containers[1].resources.limits.memory"),
        (pod_obj(init_containers=[c("i", {"nvidia.com/gpu": "one"})]),
         "spec.initContainers[0].resources.requests.nvidia.com/gpu"),
        (pod_obj(overhead={"cpu": "x"}), "spec.overhead.cpu"),
        (pod_obj(requests={"memory": "-1Gi"}), "spec.containers[0].resources.requests.memory"),
        (pod_obj(tolerations=[{"key": "k", "operator": "Maybe"}]), "spec.tolerations[0].operator"),
        (pod_obj(tolerations=[{"key": "k", "effect": "NoRun"}]), "spec.tolerations[0].effect"),
        (pod_obj(tolerations=[{"operator": "Equal", "value": "v"}]), "spec.tolerations[0].operator"),
        (pod_obj(affinity=required_affinity([{"key": "n", "operator": "Gt", "values": ["ten"]}])),
         REQ + ".nodeSelectorTerms[0].matchExpressions[0].values"),
        (pod_obj(affinity=required_affinity([{"key": "n", "operator": "Lt", "values": ["1", "2"]}])),
         REQ + ".nodeSelectorTerms[0].matchExpressions[0].values"),
        (pod_obj(affinity=required_affinity([], [{"key": "z", "operator": "Near", "values": ["a"]}])),
         REQ + ".nodeSelectorTerms[1].matchExpressions[0].operator"),
        (pod_obj(affinity=required_affinity([{"key": "z", "operator": "In", "values": []}])),
         REQ + ".nodeSelectorTerms[0].matchExpressions[0].values"),
        (pod_obj(affinity=required_affinity([{"key": "z", "operator": "Exists", "values": ["a"]}])),
         REQ + ".nodeSelectorTerms[0].matchExpressions[0].values"),
        (pod_obj(affinity=required_affinity(fields=[{"key": "metadata.uid", "operator": "In", "values": ["a"]}])),
         REQ + ".nodeSelectorTerms[0].matchFields[0].key"),
        (pod_obj(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}),
         "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
        (pod_obj(host_ports=[70000]), "spec.containers[0].ports[0].hostPort"),
        (pod_obj(containers=[{"name": "a", "ports": {"hostPort": 80}}]), "spec.containers[0].ports"),
        (pod_obj(containers="nope"), "spec.containers"),  # type: ignore[arg-type]
    ],
)
def test_malformed_pod_names_the_field(obj, field):
    with pytest.raises(PodSpecError) as err:
        PodInfo.from_api(obj)
    assert err.value.field == field
    assert str(err.value).startswith(field + ": ")


def test_lenient_path_counts_what_parses():
    obj = pod_obj(containers=[c("a", {"cpu": "bogus", "memory": "1Gi"}), c("b", {"cpu": "500m"})],
                  tolerations=[{"key": "k", "operator": "Maybe"}, {"key": "ok", "operator": "Exists"}],
                  affinity=required_affinity([{"key": "n", "operator": "Gt", "values": ["x"]}]))
    with pytest.raises(PodSpecError):
        PodInfo.from_api(obj)
    p = PodInfo.from_api(obj, LENIENT)
    assert p.requests.milli_cpu == 500 and p.requests.memory == 1024 * MI
    assert p.tolerations == (Toleration("ok", "Exists"),)
    assert p.required_node_affinity is None


def test_node_from_api():
    n = NodeInfo.from_api(node_obj("w1", cpu="2", memory="4Gi", pods="10", extra={"nvidia.com/gpu": "1"},
                                   labels={"zone": "a"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
                                   unschedulable=True))
    assert n.name == "w1" and n.labels["zone"] == "a" and n.unschedulable
    assert (n.allocatable.milli_cpu, n.allocatable.memory, n.allocatable.pods) == (2000, 4096 * MI, 10)
    assert n.allocatable.scalar == {"nvidia.com/gpu": 1}
    assert n.taints == (Taint("k", "v", "NoSchedule"),)


@pytest.mark.parametrize(
    ("conditions", "taints", "expected"),
    [
        ([{"type": "Ready", "status": "True"}], [], ()),
        ([{"type": "Ready", "status": "False"}], [], (Taint(TAINT_NOT_READY, "", "NoSchedule"),)),
        ([{"type": "Ready", "status": "Unknown"}], [], (Taint(TAINT_UNREACHABLE, "", "NoSchedule"),)),
        ([{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "True"}], [],
         (Taint("node.kubernetes.io/disk-pressure", "", "NoSchedule"),)),
        # the lifecycle controller already tainted it (NoExecute): no second taint with the same key
        ([{"type": "Ready", "status": "False"}], [{"key": TAINT_NOT_READY, "effect": "NoExecute"}],
         (Taint(TAINT_NOT_READY, "", "NoExecute"),)),
        ([], [], ()),  # no conditions reported yet: treated as ready
    ],
)
def test_node_conditions_become_taints(conditions, taints, expected):
    assert node(conditions=conditions, taints=taints).taints == expected


def test_node_accounting_add_remove_update():
    n = node("n", cpu="4")
    gen = n.generation
    a = pod("a", requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}, host_ports=[80])
    b = pod("b", requests={"cpu": "500m"}, host_ports=[80])
    n.add_pod(a)
    n.add_pod(b)
    assert n.generation > gen
    assert (n.pod_count, n.requested.milli_cpu, n.requested.pods) == (2, 1500, 2)
    assert n.requested.scalar == {"nvidia.com/gpu": 1}
    assert n.used_ports == {("TCP", 80): {"0.0.0.0": 2}}
    assert n.non_zero_requested.memory == 1024 * MI + DEFAULT_MEMORY_REQUEST
    n.add_pod(a)  # same uid again: replaced, not double counted
    assert n.pod_count == 2 and n.requested.milli_cpu == 1500
    assert n.remove_pod(a) and not n.remove_pod(a)
    assert (n.pod_count, n.requested.milli_cpu, n.requested.scalar) == (1, 500, {})
    assert n.used_ports == {("TCP", 80): {"0.0.0.0": 1}}
    n.update_node(node_obj("n", cpu="8", labels={"new": "label"}))
    assert n.allocatable.milli_cpu == 8000 and n.labels["new"] == "label" and n.pod_count == 1
    n.remove_pod(b)
    assert n.requested.is_zero() and n.used_ports == {} and n.non_zero_requested.milli_cpu == 0


def test_clone_is_independent():
    n = node("n", pods_on_it=[pod("a", requests={"cpu": "1"})])
    copy = n.clone()
    copy.add_pod(pod("b", requests={"cpu": "1"}))
    assert (n.pod_count, n.requested.milli_cpu) == (1, 1000)
    assert (copy.pod_count, copy.requested.milli_cpu) == (2, 2000)


def test_lenient_path_survives_odd_shapes():
    obj = pod_obj(containers=[{"name": "a", "ports": "80", "resources": {"requests": {"cpu": "1"}}},
                              "not a container"])
    obj["spec"]["tolerations"] = "all"
    obj["spec"]["nodeSelector"] = ["x"]
    with pytest.raises(PodSpecError):
        PodInfo.from_api(obj)
    p = PodInfo.from_api(obj, LENIENT)
    assert p.requests.milli_cpu == 1000 and p.tolerations == () and p.host_ports == frozenset()
