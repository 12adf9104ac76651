"""Waiting for the cluster: nodes Ready, then Calico and CoreDNS pods Ready.

Runs on the host after the deploys, through the control plane's kubectl (the only kubeconfig that works
before the host's copy is exported). Parsers are pure so the fast tests can feed them recorded output.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from deploys.files import ADMIN_CONF

KUBECTL = f"kubectl --kubeconfig {ADMIN_CONF}"
NODES_COMMAND = f"{KUBECTL} get nodes -o json"
SYSTEM_APPS = ("calico-node", "kube-dns")  # k8s-app labels of Calico's node agents and CoreDNS
SYSTEM_PODS_COMMAND = f"{KUBECTL} get pods --all-namespaces -l 'k8s-app in ({','.join(SYSTEM_APPS)})' -o json"


class NotReadyError(TimeoutError):
    pass


def _condition(item: dict, kind: str) -> dict | None:
    for condition in item.get("status", {}).get("conditions", []):
        if condition.get("type") == kind:
            return condition
    return None


def node_problems(nodes_json: str, expected: list[str]) -> dict[str, str]:
    """Node name -> what is wrong with it, for every expected node that is not Ready."""
    seen = {item["metadata"]["name"]: item for item in json.loads(nodes_json).get("items", [])}
    problems = {}
    for name in expected:
        item = seen.get(name)
        if item is None:
            problems[name] = "not registered with the API server"
            continue
        ready = _condition(item, "Ready")
        if not ready or ready.get("status") != "True":
            status = ready.get("status", "Unknown") if ready else "Unknown"
            detail = f"{ready.get('reason', '')}: {ready.get('message', '')}" if ready else "no Ready condition"
            problems[name] = f"Ready={status} ({detail.strip(': ')})"
    return problems


def pod_problems(pods_json: str, wanted_apps: tuple[str, ...] = SYSTEM_APPS) -> dict[str, str]:
    """Pod namespace/name -> why it is not Ready; an app with no pods at all counts as a problem."""
    items = json.loads(pods_json).get("items", [])
    problems = {}
    for app in wanted_apps:
        if not any(item["metadata"].get("labels", {}).get("k8s-app") == app for item in items):
            problems[app] = "no pods yet"
    for item in items:
        ready = _condition(item, "Ready")
        if not ready or ready.get("status") != "True":
            meta = item["metadata"]
            problems[f"{meta['namespace']}/{meta['name']}"] = item.get("status", {}).get("phase", "Unknown")
    return problems


def wait_for(what: str, check: Callable[[], dict[str, str]], timeout: float,
             echo: Callable[[str], None], interval: float = 5.0,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Poll `check` (name -> problem) until it reports nothing; print changes; raise naming what is late."""
    deadline = clock() + timeout
    last: dict[str, str] | None = None
    while True:
        problems = check()
        if not problems:
            echo(f"{what}: ready")
            return
        if problems != last:
            echo(f"{what}: waiting for " + "; ".join(f"{k}: {v}" for k, v in sorted(problems.items())))
            last = problems
        if clock() >= deadline:
            lines = "\n".join(f"  {k}: {v}" for k, v in sorted(problems.items()))
            raise NotReadyError(f"{what} not ready after {timeout:.0f}s:\n{lines}")
        sleep(interval)
