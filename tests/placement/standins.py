"""What a kubeadm lab runs beside its API server, for the placement API tests. Named stand-ins:

- The API server is kubeapi_testserver.KubeApiServer (a stand-in for kube-apiserver + etcd, real HTTP).
- The nodes are Node objects shaped like the lab's: a control plane carrying kubeadm's
  `node-role.kubernetes.io/control-plane` label (empty value) and NoSchedule taint, and workers. No
  kubelet runs: bound pods stay Pending unless `KubeletStandIn` marks them Running.
- `DeploymentStandIn` replaces kube-controller-manager and the control plane's kubelet for the scheduler
  Deployment that `deploy-scheduler` renders: while spec.replicas > 0 it runs the REAL scheduler
  (`python -m scheduler --config <the ConfigMap's config.yaml> --kubeconfig ...`) as a subprocess and
  records a Running pod with the Deployment's selector labels; at 0 it stops the process with SIGTERM
  (as the kubelet does) and deletes that pod. The ConfigMap and Deployment objects are the ones
  labkit.scheduler_deploy renders from the lab definition, created after the CRDs of the lab's plugin
  folders as deploy-scheduler applies them (RBAC and the ServiceAccount are not served by the test
  server, so they are skipped).
"""

from __future__ import annotations

import contextlib
import copy
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import yaml

from kubeapi_testserver import KubeApiServer
from kubeapi_testserver.errors import StatusError
from labdef.lab import Lab, parse_lab
from labkit import lab_plugins
from labkit.paths import PROJECT_ROOT
from labkit.scheduler_deploy import plugin_manifests
from labkit.scheduler_deploy.manifests import render_manifests

CONTROL_PLANE = "k8s-control-plane"
WORKERS = ("k8s-worker-01", "k8s-worker-02")
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
TEST_IMAGE = "localhost/kubelab-scheduler:placement-test"


BUNDLED = ("network_aware", "least_loaded")
PLUGIN_FOLDERS = [str(PROJECT_ROOT / "plugins" / name) for name in BUNDLED]
PLUGIN_SCENARIOS = [f"{folder}/scenarios.yaml" for folder in PLUGIN_FOLDERS]
NETWORK_AWARE_ARGS = {"annotationKey": "my-network-preference", "labelKey": "network-topology", "labelValue": "high-speed"}
LEAST_LOADED_ARGS = {"mode": "podCount", "strategy": "LeastAllocated"}


def lab_data(*, network_aware: dict[str, str] | None = None, least_loaded: dict[str, str] | None = None) -> dict:
    """The placement lab, shipping the bundled plugin folders and enabling them as the default lab.yaml does
    (``network_aware``/``least_loaded``: their pluginConfig args instead of the default ones)."""
    scheduler: dict[str, Any] = {"name": "my-custom-scheduler", "namespace": "kube-system",
                                 "plugins": list(PLUGIN_FOLDERS), "profile": {
                                     "plugins": {"multiPoint": {"enabled": [{"name": "NetworkAware"},
                                                                            {"name": "LeastLoaded"}]}},
                                     "pluginConfig": [
                                         {"name": "NetworkAware", "args": dict(network_aware or NETWORK_AWARE_ARGS)},
                                         {"name": "LeastLoaded", "args": dict(least_loaded or LEAST_LOADED_ARGS)}]}}
    return {
        "name": "placelab",
        "nodes": [
            {"name": CONTROL_PLANE, "role": "control-plane", "ip": "192.168.56.10", "cpus": 2, "memory_mb": 4096},
            *({"name": w, "role": "worker", "ip": f"192.168.56.{11 + i}", "cpus": 2, "memory_mb": 2048}
              for i, w in enumerate(WORKERS)),
        ],
        "scheduler": scheduler,
        "placement": {"scenarios": PLUGIN_SCENARIOS},
    }


def make_lab(**kwargs: Any) -> Lab:
    return parse_lab(lab_data(**kwargs), "test lab")


def write_lab(path: Path, **kwargs: Any) -> Path:
    path.write_text(yaml.safe_dump(lab_data(**kwargs), sort_keys=False))
    return path


def network_scenarios(path: Path, label_key: str, label_value: str) -> Path:
    """plugins/network_aware/scenarios.yaml with another label key or value, as a user's own file would say."""
    text = (PROJECT_ROOT / "plugins" / "network_aware" / "scenarios.yaml").read_text()
    path.write_text(text.replace("network-topology", label_key).replace("high-speed", label_value)
                    .replace(f"id: {label_value}", "id: high-speed")
                    .replace(f"id: no-{label_value}-node", "id: no-high-speed-node"))
    return path


def add_lab_nodes(server: KubeApiServer) -> None:
    """The lab's nodes, each already running a kube-proxy pod as a kubeadm node does."""
    server.add_node(CONTROL_PLANE, cpu="2", memory="4Gi", labels={"node-role.kubernetes.io/control-plane": ""},
                    taints=[CONTROL_PLANE_TAINT])
    for worker in WORKERS:
        server.add_node(worker, cpu="2", memory="2Gi")
    for node in (CONTROL_PLANE, *WORKERS):
        server.add_pod(f"kube-proxy-{node}", "kube-system", node_name=node, cpu="0",
                       labels={"k8s-app": "kube-proxy"})


def deploy_scheduler(server: KubeApiServer, lab: Lab) -> dict[str, Any]:
    """Store the plugin folders' CRDs (first, as deploy-scheduler applies them), then the ConfigMap and
    Deployment deploy-scheduler renders for this lab; returns the Deployment."""
    for crd in plugin_manifests.load(lab).crds:
        if server.get_object("customresourcedefinitions", crd.obj["metadata"]["name"]) is None:
            server.create_object("customresourcedefinitions", copy.deepcopy(crd.obj))
    deployment: dict[str, Any] = {}
    for manifest in render_manifests(lab, TEST_IMAGE):
        for obj in manifest.objects:
            if obj["kind"] == "ConfigMap":
                server.create_object("configmaps", obj)
            elif obj["kind"] == "Deployment":
                deployment = server.create_object("deployments", obj)
    return deployment


def local_config(config_text: str) -> str:
    """The deployed config, with its health/metrics server on a free loopback port (tests run side by side)."""
    config = yaml.safe_load(config_text)
    config["healthzBindAddress"] = config["metricsBindAddress"] = "127.0.0.1:0"
    return yaml.safe_dump(config)


class SchedulerProcess:
    """The real scheduler as a subprocess: `python -m scheduler --config FILE --kubeconfig FILE --plugins ...`
    (``plugins``: the lab's plugin sources on this host, where the image would hold them)."""

    def __init__(self, config_text: str, kubeconfig: Path, workdir: Path, plugins: Sequence[str] = ()) -> None:
        self.config_file = workdir / "scheduler-config.yaml"
        self.config_file.write_text(local_config(config_text))
        self.kubeconfig = kubeconfig
        self.plugins = [arg for source in plugins for arg in ("--plugins", source)]
        self.log_file = workdir / "scheduler.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "scheduler", "--config", str(self.config_file),
                 "--kubeconfig", str(self.kubeconfig), *self.plugins], cwd=PROJECT_ROOT, stdout=log,
                stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""


class DeploymentStandIn:
    """Keeps the real scheduler process in line with the Deployment's spec.replicas (0 or more -> one)."""

    def __init__(self, server: KubeApiServer, lab: Lab, kubeconfig: Path, workdir: Path) -> None:
        self.server = server
        self.namespace, self.name = lab.scheduler.namespace, lab.scheduler.name
        config = server.get_object("configmaps", f"{self.name}-config", self.namespace)
        assert config is not None, "deploy_scheduler() first"
        self.process = SchedulerProcess(config["data"]["config.yaml"], kubeconfig, workdir,
                                        lab_plugins.host_sources(lab))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="deployment-stand-in", daemon=True)
        self.starts = 0

    def __enter__(self) -> Self:
        self.sync()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.process.stop()

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            self.sync()

    def sync(self) -> None:
        deployment = self.server.get_object("deployments", self.name, self.namespace)
        want = (deployment or {}).get("spec", {}).get("replicas", 1) if deployment else 0
        if want and not self.process.running:
            self.process.start()
            self.starts += 1
            self._record_pod(deployment)
        elif not want and self.process.running:
            self.process.stop()
            self._delete_pod()
        if deployment is not None:
            ready = 1 if self.process.running else 0
            if (deployment.get("status") or {}).get("readyReplicas") != ready:
                self.server.update_object("deployments", self.name,
                                          {"status": {"replicas": ready, "readyReplicas": ready}}, self.namespace)

    def _pod_name(self) -> str:
        return f"{self.name}-standin"

    def _record_pod(self, deployment: dict[str, Any]) -> None:
        labels = deployment["spec"]["selector"]["matchLabels"]
        pod = {"metadata": {"name": self._pod_name(), "namespace": self.namespace, "labels": dict(labels)},
               "spec": {"nodeName": CONTROL_PLANE, "containers": [{"name": "scheduler", "image": TEST_IMAGE}]}}
        if self.server.get_object("pods", self._pod_name(), self.namespace) is None:
            self.server.create_object("pods", pod)
        self.server.update_pod(self._pod_name(), {"status": {"phase": "Running"}}, self.namespace)

    def _delete_pod(self) -> None:
        if self.server.get_object("pods", self._pod_name(), self.namespace) is not None:
            self.server.remove_pod(self._pod_name(), self.namespace)


class KubeletStandIn:
    """Marks every bound pod Running, as the kubelet would once its containers start (--wait-running)."""

    def __init__(self, server: KubeApiServer) -> None:
        self.server = server
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubelet-stand-in", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            for pod in self.server.pods():
                if pod["spec"].get("nodeName") and (pod.get("status") or {}).get("phase") == "Pending":
                    with contextlib.suppress(StatusError):  # the pod may be deleted between list and update
                        self.server.update_pod(pod["metadata"]["name"], {"status": {"phase": "Running"}},
                                               pod["metadata"]["namespace"])

