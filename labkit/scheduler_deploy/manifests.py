"""The scheduler's manifests: its config and every object deploy-scheduler applies, rendered from the lab
definition (templates/scheduler/), and written out for review (`--render-only DIR`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labdef.lab import Lab
from labdef.render import render

TEMPLATE_DIR = "scheduler"
# The order objects are applied in: what others refer to first.
MANIFESTS = ("serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml")
CHECKSUM_ANNOTATION = "kubelab.io/config-checksum"
RUN_AS_USER = 65532  # the numeric non-root user of scheduler/Containerfile


@dataclass(frozen=True)
class Manifest:
    filename: str
    text: str

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [doc for doc in yaml.safe_load_all(self.text) if doc]


def common_labels(lab: Lab) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "kubelab-scheduler",
        "app.kubernetes.io/instance": lab.scheduler.name,
        "app.kubernetes.io/component": "scheduler",
        "app.kubernetes.io/managed-by": "kubelab",
    }


def selector_labels(lab: Lab) -> dict[str, str]:
    """The Deployment's selector: immutable once created, so only the labels that never change."""
    labels = common_labels(lab)
    return {key: labels[key] for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance")}


def render_config(lab: Lab) -> str:
    s = lab.scheduler
    return render(f"{TEMPLATE_DIR}/config.yaml.j2", name=s.name, namespace=s.namespace,
                  leader_elect=s.leader_elect, port=s.port,
                  network_aware=s.network_aware, least_loaded=s.least_loaded)


def config_checksum(config_text: str) -> str:
    return hashlib.sha256(config_text.encode()).hexdigest()


def render_manifests(lab: Lab, image: str) -> list[Manifest]:
    """Every object deploy-scheduler applies, as text, in apply order."""
    s = lab.scheduler
    config_text = render_config(lab)
    values = {
        "name": s.name,
        "namespace": s.namespace,
        "labels": common_labels(lab),
        "selector": selector_labels(lab),
        "config_text": config_text.rstrip("\n"),
        "config_checksum": config_checksum(config_text),
        "image": image,
        "replicas": s.replicas,
        # Without leader election two pods would both schedule: never run old and new side by side.
        "strategy": "RollingUpdate" if s.leader_elect else "Recreate",
        "log_level": s.log_level,
        "port": s.port,
        "cpu_request": s.cpu_request,
        "memory_request": s.memory_request,
        "memory_limit": s.memory_limit,
        "run_as_user": RUN_AS_USER,
    }
    return [Manifest(name, render(f"{TEMPLATE_DIR}/{name}.j2", **values)) for name in MANIFESTS]


def write_manifests(manifests: list[Manifest], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, manifest in enumerate(manifests, start=1):
        path = directory / f"{index:02d}-{manifest.filename}"
        path.write_text(manifest.text)
        paths.append(path)
    return paths
