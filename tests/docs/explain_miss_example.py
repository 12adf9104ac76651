"""The resource-miss example docs/user-guide/explain.md shows, made afresh: 60 nodes of 4 cpu on the API test
server, 3 cpu requested on each but node-7 (1.5), node-0 tainted, the scheduler's ConfigMap as
deploy-scheduler renders it; then `./lab explain big --what-if big.yaml` for a pod asking 3 cpu.

Run by the docs tests through the page's output block: `.venv/bin/python -m tests.docs.explain_miss_example`."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kubeapi_testserver import running_server
from tests.docs.explain_example import explain_what_if
from tests.placement.standins import deploy_scheduler, make_lab

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
        return explain_what_if(server, folder, BIG)


if __name__ == "__main__":
    sys.exit(main())
