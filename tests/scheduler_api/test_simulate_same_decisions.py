"""`./lab simulate` decides as the scheduler does: one workload, from simulate's own files, goes through the real
scheduler process (`python -m scheduler --config ... --kubeconfig ...` against the API test server, its cache
filled by its informers) and through simulate, which reads the same cluster with --from-cluster (listed once
from that server). Pods are created one at a time, in the workload's arrival order, each bound before the next
(as the simulated clock orders them; ties go as kube-scheduler's selectHost breaks them, no draw). Every pod
lands on the same node, and a pod no node fits stays pending with the same FailedScheduling message."""

from __future__ import annotations

import signal

import pytest
import yaml

from kubeapi_testserver.fixtures import free_port
from labkit.kube import Kube
from labkit.simulate.engine import run_profile
from labkit.simulate.inputs import SimProfile, cluster_from_live, pool_nodes, workload_from_file
from labkit.simulate.schema import load_cluster_file
from scheduler.config import parse_config
from tests import bundled_plugins
from tests.scheduler_api.harness import SCHEDULER, config_with, pod_events, scheduler_process

pytestmark = pytest.mark.api

CLUSTER = """\
pools:
  - name: small
    count: 4
    capacity: {cpu: "4", memory: 8Gi, pods: "110"}
    zones: [z1, z2]
  - name: big
    count: 2
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
    zones: [z1, z2]
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
"""
WORKLOAD = """\
items:
  - name: web
    replicas: 10
    rate: 1
    requests: {cpu: 500m, memory: 1Gi}
    labels: {app: web}
    template:
      spec:
        topologySpreadConstraints:
          - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway,
             labelSelector: {matchLabels: {app: web}}}
  - name: batch
    replicas: 5
    at: 20
    rate: 1
    requests: {cpu: "3", memory: 6Gi}
    template:
      spec:
        tolerations: [{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}]
  - name: huge
    at: 40
    requests: {cpu: "16"}
"""


def test_simulate_places_a_workload_as_the_scheduler_process_does(kube_api, kube_api_kubeconfig, tmp_path):
    cluster_file, workload_file = tmp_path / "cluster.yaml", tmp_path / "workload.yaml"
    cluster_file.write_text(CLUSTER)
    workload_file.write_text(WORKLOAD)
    for node in pool_nodes(load_cluster_file(cluster_file)):
        kube_api.add_node(node)
    config_text = config_with(plugins=[{"name": "LeastLoaded"}])

    # simulate: the cluster as --from-cluster reads it, before any workload pod exists
    registry = bundled_plugins.registry()
    profile = SimProfile("lab", SCHEDULER, parse_config(yaml.safe_load(config_text), "config", registry), registry)
    kube = Kube.from_kubeconfig(kube_api_kubeconfig)
    try:
        cluster = cluster_from_live(kube)
    finally:
        kube.close()
    workload = workload_from_file(workload_file)
    simulated = run_profile(profile, cluster, workload, until=600.0)

    # the scheduler process: each pod created in arrival order, waited for before the next
    port = free_port()
    config_file = tmp_path / "scheduler.yaml"
    config_file.write_text(config_text + f"healthzBindAddress: 127.0.0.1:{port}\nmetricsBindAddress: 127.0.0.1:{port}\n")
    placed: dict[str, str] = {}
    failed: dict[str, str] = {}
    proc = scheduler_process(["--config", str(config_file), "--kubeconfig", str(kube_api_kubeconfig)])
    try:
        for arrival in workload.arrivals:
            pod = dict(arrival.pod, spec={**arrival.pod["spec"], "schedulerName": SCHEDULER})
            pod["metadata"] = {k: v for k, v in pod["metadata"].items() if k not in ("uid", "creationTimestamp")}
            kube_api.add_pod(pod)
            name = pod["metadata"]["name"]
            kube_api.wait_for(lambda name=name: (kube_api.get_object("pods", name, "default") or {})
                              .get("spec", {}).get("nodeName") or pod_events(kube_api, name, "FailedScheduling"),
                              timeout=30)
            node = kube_api.get_object("pods", name, "default")["spec"].get("nodeName")
            if node:
                placed[f"default/{name}"] = node
            else:
                failed[f"default/{name}"] = pod_events(kube_api, name, "FailedScheduling")[0]["message"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out

    assert len(placed) == 15 and list(failed) == ["default/huge-0"]
    assert simulated.node_of == placed
    assert simulated.pending == failed
