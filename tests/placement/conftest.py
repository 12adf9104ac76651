"""Fixtures for the placement suites: a lab-shaped cluster on the API test server, the scheduler deployed
into it the way deploy-scheduler renders it, and the test-placement command run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver import KubeApiServer
from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from labkit.paths import PROJECT_ROOT
from tests.placement.standins import DeploymentStandIn, add_lab_nodes, deploy_scheduler, make_lab, write_lab


@dataclass
class Cluster:
    server: KubeApiServer
    kubeconfig: Path
    lab_file: Path
    workdir: Path

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in self.server.nodes()}

    def placement_namespaces(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.server.list_objects("namespaces")
                if n["metadata"]["name"].startswith("placement-")]

    def run(self, *args: str, lab_file: Path | None = None, timeout: float = 300,
            via_invoke: bool = False) -> subprocess.CompletedProcess[str]:
        """`python -m labkit.placement` (the command line behind `./lab test-placement`), or with
        via_invoke the invoke verb itself, against this cluster."""
        entry = ["invoke", "test-placement"] if via_invoke else ["labkit.placement"]
        cmd = [sys.executable, "-m", *entry, "--lab", str(lab_file or self.lab_file),
               "--kubeconfig", str(self.kubeconfig), *args]
        env = {**os.environ, "COLUMNS": "220"}
        return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def run_json(self, *args: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        proc = self.run("--json", *args, **kwargs)
        try:
            return proc.returncode, json.loads(proc.stdout)
        except ValueError:
            pytest.fail(f"no JSON report (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


@pytest.fixture
def cluster(kube_api: KubeApiServer, kube_api_kubeconfig: Path, tmp_path: Path) -> Cluster:  # noqa: F811
    """The lab's nodes on the test server; no scheduler yet."""
    add_lab_nodes(kube_api)
    return Cluster(kube_api, kube_api_kubeconfig, write_lab(tmp_path / "lab.yaml"), tmp_path)


@pytest.fixture
def deployed(cluster: Cluster) -> Iterator[DeploymentStandIn]:
    """The scheduler deployed from the lab definition and running (the real process)."""
    lab = make_lab()
    deploy_scheduler(cluster.server, lab)
    with DeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir) as standin:
        yield standin


def by_scenario(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["scenario"]: r for r in report["results"]}
