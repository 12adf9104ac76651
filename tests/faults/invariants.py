"""What every fault case asserts about the cluster once the scheduler has recovered."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable

from kubeapi_testserver.server import KubeApiServer
from scheduler.quantity import parse_milli


def binds_per_pod(kube_api: KubeApiServer) -> Counter[str]:
    """Successful bindings (201) per pod name, as the API server answered them."""
    return Counter(r.name for r in kube_api.requests if r.resource == "pods/binding" and r.code == 201)


def overcommitted_nodes(kube_api: KubeApiServer) -> dict[str, str]:
    """Nodes whose bound pods request more cpu than the node has allocatable, or more pods."""
    cpu: dict[str, int] = defaultdict(int)
    count: Counter[str] = Counter()
    for pod in kube_api.pods():
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        count[node] += 1
        for container in pod["spec"]["containers"]:
            cpu[node] += parse_milli(((container.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
    over = {}
    for node in kube_api.nodes():
        name, allocatable = node["metadata"]["name"], node["status"]["allocatable"]
        if cpu[name] > parse_milli(allocatable["cpu"]) or count[name] > int(allocatable["pods"]):
            over[name] = f"{cpu[name]}m cpu in {count[name]} pods, allocatable {allocatable['cpu']} cpu"
    return over


def assert_placed_safely(kube_api: KubeApiServer, names: Iterable[str], *,
                         recreated: Collection[str] = ()) -> None:
    """Every named pod (namespace default) bound, each by exactly one binding (a `recreated` name: at most
    one per incarnation), and no node over-committed."""
    bound = kube_api.bound_pods("default")
    missing = sorted(n for n in names if f"default/{n}" not in bound)
    assert not missing, f"{len(missing)} pods never bound: {missing[:10]}"
    twice = {name: n for name, n in binds_per_pod(kube_api).items() if n > (2 if name in recreated else 1)}
    assert not twice, f"pods bound more than once: {twice}"
    assert not overcommitted_nodes(kube_api), f"over-committed nodes: {overcommitted_nodes(kube_api)}"
