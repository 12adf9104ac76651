"""The gang examples docs/user-guide/explain.md shows, made afresh: the placement suites' lab-shaped cluster on
the API test server, the lab shipping examples/coscheduling and enabling it (tests/placement/gang.py), the
PodGroup CRD, a PodGroup `train` of minMember 3 with two members so far, then `./lab explain train-0`; a third
member, then `./lab explain train-0` again: the gang is complete, and the first member placed would wait at
Permit for the others. No scheduler process runs: what is shown is the scheduler's code deciding, here.

Run by the docs tests through the page's output blocks: `.venv/bin/python -m tests.docs.explain_gang_example
gated` (or `waiting`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from kubeapi_testserver import running_server
from kubeapi_testserver.objects import make_pod
from labdef.lab import parse_lab
from labkit.paths import PROJECT_ROOT
from tests.placement.gang import EXAMPLE, GROUP_LABEL, SCHEDULER, gang_lab_data, podgroup
from tests.placement.standins import add_lab_nodes, deploy_scheduler


def main(which: str) -> int:
    with tempfile.TemporaryDirectory() as tmp, running_server() as server:
        folder = Path(tmp)
        add_lab_nodes(server)
        for crd in yaml.safe_load_all((EXAMPLE / "crds" / "podgroup.yaml").read_text()):
            server.create_object("customresourcedefinitions", crd)
        data = gang_lab_data()
        deploy_scheduler(server, parse_lab(data, "gang lab"))
        lab = folder / "lab.yaml"
        lab.write_text(yaml.safe_dump(data, sort_keys=False))
        server.create_object("podgroups.scheduling.x-k8s.io", podgroup("train", 3, 60))
        for i in range(2 if which == "gated" else 3):
            server.add_pod(make_pod(f"train-{i}", cpu="500m", scheduler_name=SCHEDULER, labels={GROUP_LABEL: "train"}))
        kubeconfig = server.write_kubeconfig(folder / "kubeconfig")
        print("$ ./lab explain train-0", flush=True)
        proc = subprocess.run([sys.executable, "-m", "invoke", "explain", "train-0", "--kubeconfig", str(kubeconfig),
                               "--lab", str(lab)], cwd=PROJECT_ROOT,
                              env={**os.environ, "COLUMNS": os.environ.get("COLUMNS", "110")}, check=False,
                              capture_output=True, text=True, timeout=120)
        print((proc.stdout + proc.stderr).rstrip())
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "gated"))
