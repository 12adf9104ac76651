"""The explain example docs/user-guide/explain.md shows, made afresh: the placement suites' lab-shaped cluster on
the API test server (the lab's nodes, the scheduler's ConfigMap as deploy-scheduler renders it), the first
replica of a set with a required anti-affinity on kubernetes.io/hostname bound to k8s-worker-01, then
`./lab explain web-1 --what-if web-1.yaml` for the second replica, printed as a user sees it.

Run by the docs tests through the page's output block: `.venv/bin/python -m tests.docs.explain_example`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from kubeapi_testserver import running_server
from labkit.paths import PROJECT_ROOT
from tests.placement.standins import WORKERS, add_lab_nodes, deploy_scheduler, make_lab, write_lab

ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def replica(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"schedulerName": "my-custom-scheduler", "affinity": ANTI_AFFINITY,
                     "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10.2",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, running_server() as server:
        folder = Path(tmp)
        add_lab_nodes(server)
        deploy_scheduler(server, make_lab())
        server.add_pod("web-0", node_name=WORKERS[0], labels={"app": "web"}, cpu="100m")
        return explain_what_if(server, folder, replica("web-1"))


def explain_what_if(server, folder: Path, pod: dict) -> int:
    """`./lab explain NAME --what-if NAME.yaml` against ``server`` with the lab's definition, printed as a user
    sees it (the temporary folder's path left out); its exit code."""
    name = pod["metadata"]["name"]
    manifest = folder / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump(pod, sort_keys=False))
    kubeconfig = server.write_kubeconfig(folder / "kubeconfig")
    lab = write_lab(folder / "lab.yaml")
    print(f"$ ./lab explain {name} --what-if {name}.yaml", flush=True)
    proc = subprocess.run([sys.executable, "-m", "invoke", "explain", name, "--what-if", str(manifest),
                           "--kubeconfig", str(kubeconfig), "--lab", str(lab)], cwd=PROJECT_ROOT,
                          env={**os.environ, "COLUMNS": os.environ.get("COLUMNS", "110")}, check=False,
                          capture_output=True, text=True, timeout=120)
    print((proc.stdout + proc.stderr).replace(str(manifest), f"{name}.yaml").rstrip())
    return proc.returncode

if __name__ == "__main__":
    sys.exit(main())
