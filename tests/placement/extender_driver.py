"""Extender mode's Deployment for the placement API tests, with the REAL extender and NO kube-scheduler.

There is no kube-scheduler binary on these machines, and nothing here pretends to be one.
`ExtenderDeploymentStandIn` runs the real extender (`python -m scheduler extender --config <the ConfigMap's
config.yaml> --kubeconfig ... --listen 127.0.0.1:<free port>`) and records a Running pod for the Deployment,
as DeploymentStandIn does for standalone mode. In kube-scheduler's place a test driver calls the extender
the way kube-scheduler's HTTPExtender does (POST urlPrefix/filter and /prioritize, ExtenderArgs with
NodeNames or a NodeList as the ConfigMap's kube-scheduler.yaml sets nodeCacheCapable) for each pending pod
naming the lab's scheduler, and binds the pod to the highest-scored node that passed the filter. It runs
none of kube-scheduler's own plugins (taints, resources, affinity...), no queue, backoff or preemption; when
no node passes it records a FailedScheduling event whose message says it comes from this driver and carries
the extender's reasons. So these tests prove test-placement's extender mode and the extender's answers, not
kube-scheduler's decisions.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Self

import yaml

from kubeapi_testserver import KubeApiServer
from kubeapi_testserver.errors import StatusError
from kubeapi_testserver.fixtures import free_port
from labdef.lab import Lab
from labkit import lab_plugins
from labkit.kube import Kube, pod_path
from labkit.paths import PROJECT_ROOT
from tests.placement.standins import CONTROL_PLANE, TEST_IMAGE

DRIVER = "extender-test-driver"


class ExtenderDeploymentStandIn:
    def __init__(self, server: KubeApiServer, lab: Lab, kubeconfig: Path, workdir: Path) -> None:
        self.server, self.lab, self.kubeconfig = server, lab, kubeconfig
        s = lab.scheduler
        data = server.get_object("configmaps", f"{s.name}-config", s.namespace)["data"]
        self.extender_config = yaml.safe_load(data["kube-scheduler.yaml"])["extenders"][0]
        self.config_file = workdir / "extender-config.yaml"
        self.config_file.write_text(data["config.yaml"])
        self.log_file = workdir / "extender.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.kube = Kube.from_kubeconfig(kubeconfig)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=DRIVER, daemon=True)

    def __enter__(self) -> Self:
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "scheduler", "extender", "--config", str(self.config_file),
                 "--kubeconfig", str(self.kubeconfig), "--listen", f"127.0.0.1:{self.port}",
                 *(arg for source in lab_plugins.host_sources(self.lab) for arg in ("--plugins", source))],
                cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
        self.server.wait_for(self._ready, timeout=30)
        self._record_running_pod()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.kube.close()

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def _ready(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.log()
        with contextlib.suppress(OSError):
            return self._call("GET", "/readyz")[0] == 200
        return False

    def _record_running_pod(self) -> None:
        s = self.lab.scheduler
        deployment = self.server.get_object("deployments", s.name, s.namespace)
        labels = deployment["spec"]["selector"]["matchLabels"]
        self.server.create_object("pods", {
            "metadata": {"name": f"{s.name}-standin", "namespace": s.namespace, "labels": dict(labels)},
            "spec": {"nodeName": CONTROL_PLANE, "containers": [{"name": "extender", "image": TEST_IMAGE}]}})
        self.server.update_pod(f"{s.name}-standin", {"status": {"phase": "Running"}}, s.namespace)
        self.server.update_object("deployments", s.name, {"status": {"replicas": 1, "readyReplicas": 1}},
                                  s.namespace)

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            payload = None if body is None else json.dumps(body)
            conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            text = response.read()
            return response.status, json.loads(text) if method == "POST" else None
        finally:
            conn.close()

    def _loop(self) -> None:
        decided: set[str] = set()
        while not self._stop.wait(0.1):
            for pod in self.server.pods():
                uid = pod["metadata"]["uid"]
                if (uid in decided or pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp")
                        or pod["spec"].get("schedulerName") != self.lab.scheduler.name):
                    continue
                decided.add(uid)  # one attempt per pod: no queue, no retries
                with contextlib.suppress(StatusError, OSError):
                    self._decide(pod)

    def _decide(self, pod: dict[str, Any]) -> None:
        nodes = self.server.nodes()
        args: dict[str, Any] = {"Pod": pod, "Nodes": None, "NodeNames": None}
        if self.extender_config["nodeCacheCapable"]:
            args["NodeNames"] = [n["metadata"]["name"] for n in nodes]
        else:
            args["Nodes"] = {"items": nodes}
        code, filtered = self._call("POST", f"/{self.extender_config['filterVerb']}", args)
        assert code == 200, filtered
        passing = filtered["NodeNames"] if args["NodeNames"] is not None else [
            n["metadata"]["name"] for n in (filtered["Nodes"] or {}).get("items", [])]
        meta = pod["metadata"]
        if not passing:
            reasons = {**filtered["FailedNodes"], **filtered["FailedAndUnresolvableNodes"]}
            self._event(pod, f"{DRIVER} (not kube-scheduler): no node passed the extender's filter: " + "; ".join(
                f"{node}: {reason}" for node, reason in sorted(reasons.items())))
            return
        narrowed = {**args, "NodeNames": passing} if args["NodeNames"] is not None else {
            **args, "Nodes": {"items": [n for n in nodes if n["metadata"]["name"] in passing]}}
        code, scores = self._call("POST", f"/{self.extender_config['prioritizeVerb']}", narrowed)
        assert code == 200, scores
        best = max(scores, key=lambda s: s["Score"])["Host"]
        self.kube.request("POST", pod_path(meta["namespace"], meta["name"], "binding"), body={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"], "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": best}})

    def _event(self, pod: dict[str, Any], message: str) -> None:
        meta = pod["metadata"]
        self.server.create_object("events", {
            "metadata": {"name": f"{meta['name']}.{time.monotonic_ns()}", "namespace": meta["namespace"]},
            "involvedObject": {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                               "uid": meta["uid"]},
            "reason": "FailedScheduling", "type": "Warning", "message": message,
            "source": {"component": DRIVER}})
