"""`./lab status`'s cluster part against the Kubernetes API test server (stand-in for the lab's API server)."""

from pathlib import Path

import pytest

from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit import cluster
from labkit.kube import KubeconfigError
from labkit.scheduler_deploy.manifests import render_manifests

LAB = load_lab(DEFAULT_LAB_FILE)


@pytest.mark.api
def test_nodes_and_missing_scheduler(kube_api, kube_api_kubeconfig: Path):
    kube_api.add_node("k8s-control-plane", labels={"node-role.kubernetes.io/control-plane": ""})
    kube_api.add_node("k8s-worker-01", ready=False)
    rows, sched = cluster.summary(kube_api_kubeconfig, LAB)
    by_name = {r.name: r for r in rows}
    assert by_name["k8s-control-plane"].roles == "control-plane"
    assert by_name["k8s-control-plane"].ready == "Ready"
    assert (by_name["k8s-worker-01"].ready, by_name["k8s-worker-01"].roles) == ("NotReady", "<none>")
    assert sched is None


@pytest.mark.api
def test_deployed_scheduler_readiness_and_image(kube_api, kube_api_kubeconfig: Path):
    dep = next(o for m in render_manifests(LAB, "localhost/kubelab-scheduler:abc") for o in m.objects
               if o["kind"] == "Deployment")
    kube_api.create_object("deployments", dep)
    kube_api.update_object("deployments", dep["metadata"]["name"], {"status": {"readyReplicas": 1}},
                           LAB.scheduler.namespace)
    _, sched = cluster.summary(kube_api_kubeconfig, LAB)
    assert sched == cluster.SchedulerRow(ready="1/1", image="localhost/kubelab-scheduler:abc")


def test_missing_kubeconfig_is_a_clear_error(tmp_path):
    with pytest.raises(KubeconfigError, match="no such kubeconfig"):
        cluster.summary(tmp_path / "kubeconfig", LAB)
