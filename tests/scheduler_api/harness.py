"""Run the real scheduler (scheduler.runtime.scheduler.Scheduler, the object `python -m scheduler` builds) in-process
against the Kubernetes API test server in kubeapi_testserver, over HTTP with a kubeconfig."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import yaml

from kubeapi_testserver.fixtures import free_port
from kubeapi_testserver.kubeconfig import write_kubeconfig
from kubeapi_testserver.objects import make_pod
from scheduler.config import parse_config
from scheduler.framework import build_profiles
from scheduler.runtime.client import Client, load_configuration
from scheduler.runtime.scheduler import LeaderSettings, RuntimeSettings, Scheduler
from tests import bundled_plugins

SCHEDULER = "my-custom-scheduler"
REPO = Path(__file__).resolve().parents[2]

NETWORK_AWARE_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: {SCHEDULER}
    plugins:
      multiPoint:
        enabled:
          - name: "NetworkAware"
"""


def config_with(
    plugins: list[dict[str, Any]] | None = None,
    plugin_config: list[dict[str, Any]] | None = None,
    scheduler_name: str = SCHEDULER,
) -> str:
    profile: dict[str, Any] = {"schedulerName": scheduler_name}
    if plugins:
        profile["plugins"] = {"multiPoint": {"enabled": plugins}}
    if plugin_config:
        profile["pluginConfig"] = plugin_config
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [profile],
        }
    )


def our_pod(name: str, *, container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod for SCHEDULER (kubeapi_testserver.objects.make_pod) with extra spec fields and container fields."""
    pod = make_pod(name, scheduler_name=SCHEDULER)
    pod["spec"].update(spec)
    pod["spec"]["containers"][0].update(container or {})
    return pod


def unreachable_kubeconfig(path: Path) -> tuple[Path, str]:
    """A kubeconfig for an API server address nobody listens on: the file and that address."""
    url = f"http://127.0.0.1:{free_port()}"
    return write_kubeconfig(path, url, token="t"), url


def make_scheduler(
    kubeconfig: Path,
    config_text: str = NETWORK_AWARE_CONFIG,
    *,
    leader: LeaderSettings | None = None,
    qps: float = 0,
    burst: int = 100,
    seed: int = 1,
    bind_workers: int = 8,
) -> Scheduler:
    cfg = parse_config(yaml.safe_load(config_text), "config", bundled_plugins.registry())
    client = Client(load_configuration(str(kubeconfig)), qps=qps, burst=burst, pool_size=bind_workers + 8)
    settings = RuntimeSettings(leader=leader, serve=(("127.0.0.1", 0),), seed=seed, bind_workers=bind_workers)
    return Scheduler(client, build_profiles(cfg), settings)


def scheduler_process(args: list[str], stdout: int | IO[str] = subprocess.PIPE) -> subprocess.Popen:
    """`python -m scheduler ARGS` from this checkout, as a user runs it (output and errors to `stdout`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "scheduler", *args, *bundled_plugins.CLI_ARGS],
        cwd=REPO,
        text=True,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )


@contextmanager
def running_scheduler(
    kubeconfig: Path, config_text: str = NETWORK_AWARE_CONFIG, **kwargs: Any
) -> Iterator[Scheduler]:
    sched = make_scheduler(kubeconfig, config_text, **kwargs)
    sched.start()
    try:
        assert sched.wait_synced(10), "scheduler caches did not sync with the test API server"
        yield sched
    finally:
        sched.stop()


def pod_events(kube_api: Any, name: str, reason: str | None = None, namespace: str = "default") -> list[dict]:
    """core/v1 view of the events about one pod (the server stores events.k8s.io/v1 events too)."""
    return [
        e
        for e in kube_api.events(namespace)
        if e.get("involvedObject", {}).get("name") == name and (reason is None or e.get("reason") == reason)
    ]


def pod_condition(kube_api: Any, name: str, namespace: str = "default") -> dict | None:
    pod = kube_api.get_object("pods", name, namespace) or {}
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return cond
    return None
