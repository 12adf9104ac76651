"""The rendered config and the Deployment's own args (the plugin folders included) start the real scheduler,
whose health endpoints answer where the probes look and which places a pod.

The scheduler runs as a subprocess on this host (`python -m scheduler` with the Deployment's args, the
ConfigMap's config, and --kubeconfig for kubeapi_testserver, the in-repo Kubernetes API test server that stands
in for kube-apiserver); in the cluster the kubelet would start it the same way inside the image.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kubeapi_testserver.fixtures import free_port
from labkit import lab_plugins
from labkit.lab_plugins import IMAGE_PLUGINS_DIR
from labkit.scheduler_deploy.manifests import render_manifests
from tests.deploy_scheduler.test_manifests import lab_with

pytestmark = pytest.mark.api
REPO = Path(__file__).resolve().parents[2]
CONFIG_MOUNT = "/etc/kubelab-scheduler/config.yaml"


def probe(url: str, deadline: float) -> int:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_rendered_scheduler_starts_answers_its_probes_and_binds(kube_api, kube_api_kubeconfig, tmp_path) -> None:
    lab = lab_with(port=free_port())
    objs = {o["kind"]: o for m in render_manifests(lab, "unused:tag") for o in m.objects}
    config = tmp_path / "config.yaml"
    config.write_text(objs["ConfigMap"]["data"]["config.yaml"])
    container = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    # The image's paths on this host: the config file, and each plugin folder where the image would hold it.
    here = {CONFIG_MOUNT: str(config)} | {f"{IMAGE_PLUGINS_DIR}/{f.name}": str(f) for f in lab_plugins.folders(lab)}
    args = [f"{flag}={here.get(value, value)}" if sep else flag
            for flag, sep, value in (arg.partition("=") for arg in container["args"])]
    assert sum(arg.startswith("--plugins=") for arg in args) == len(lab.scheduler.plugins)
    kube_api.add_nodes(2)

    proc = subprocess.Popen([sys.executable, "-m", "scheduler", *args, "--kubeconfig", str(kube_api_kubeconfig)],
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        port = container["ports"][0]["containerPort"]
        deadline = time.monotonic() + 30
        for name in ("livenessProbe", "readinessProbe", "startupProbe"):
            path = container[name]["httpGet"]["path"]
            assert probe(f"http://127.0.0.1:{port}{path}", deadline) == 200, name
        kube_api.add_pod("p1", cpu="100m", scheduler_name=lab.scheduler.name)
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/p1"), timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
