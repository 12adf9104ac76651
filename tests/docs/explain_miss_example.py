"""The resource-miss example docs/user-guide/explain.md shows, made afresh: 60 nodes of 4 cpu on the API test
server, 3 cpu requested on each but node-7 (1.5), node-0 tainted, the scheduler's ConfigMap as
deploy-scheduler renders it; then `./lab explain big --what-if big.yaml` for a pod asking 3 cpu.

Run by the docs tests through the page's output block: `.venv/bin/python -m tests.docs.explain_miss_example`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from kubeapi_testserver import running_server
from labkit.paths import PROJECT_ROOT
from tests.placement.standins import deploy_scheduler, make_lab, write_lab

NODES = 60
BIG = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
       "spec": {"schedulerName": "my-custom-scheduler",
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10.2",
                                "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, running_server() as server:
        folder = Path(tmp)
        for i in range(NODES):
            taints = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}] if i == 0 else None
            server.add_node(f"node-{i}", cpu="4", memory="16Gi", taints=taints)
            server.add_pod(f"app-{i}", node_name=f"node-{i}", cpu="1500m" if i == 7 else "3", memory="1Gi")
        deploy_scheduler(server, make_lab())
        manifest = folder / "big.yaml"
        manifest.write_text(yaml.safe_dump(BIG, sort_keys=False))
        kubeconfig = server.write_kubeconfig(folder / "kubeconfig")
        lab = write_lab(folder / "lab.yaml")
        print("$ ./lab explain big --what-if big.yaml", flush=True)
        proc = subprocess.run([sys.executable, "-m", "invoke", "explain", "big", "--what-if", str(manifest),
                               "--kubeconfig", str(kubeconfig), "--lab", str(lab)], cwd=PROJECT_ROOT,
                              env={**os.environ, "COLUMNS": os.environ.get("COLUMNS", "110")}, check=False,
                              capture_output=True, text=True, timeout=120)
        print((proc.stdout + proc.stderr).replace(str(manifest), "big.yaml").rstrip())
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
