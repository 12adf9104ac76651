"""`invoke deploy-scheduler`: build the scheduler image, side-load it, render and apply its manifests.

    python -m labkit.scheduler_deploy [--lab FILE] [--kubeconfig FILE] [--render-only DIR]

Steps, each safe to repeat:
1. image: the content tag (labkit.image) names the image; an archive already built for it is reused.
2. side-load: deploys/scheduler_image.py uploads the archive to every node and imports it into
   containerd's k8s.io namespace, skipping nodes that already hold that exact image.
3. render: templates/scheduler/*.yaml.j2 with values from the lab definition; the Deployment's pod
   template carries the rendered config's checksum, so a config change restarts the pod.
4. apply: server-side apply from the host with the lab's kubeconfig (field manager "kubelab"); an
   unchanged object keeps its resourceVersion, so a re-run with nothing changed changes nothing.
5. rollout: wait for the Deployment like `kubectl rollout status`; on failure print the pods' events
   and last log lines.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labkit.definition import Lab, LabError, load_lab
from labkit.render import render

TEMPLATE_DIR = "scheduler"
# The order objects are applied in: what others refer to first.
MANIFESTS = ("serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml")
CHECKSUM_ANNOTATION = "kubelab.io/config-checksum"
RUN_AS_USER = 65532  # the numeric non-root user of scheduler/Containerfile
FIELD_MANAGER = "kubelab"

Echo = Callable[[str], None]


class DeployError(RuntimeError):
    """deploy-scheduler failed; the message says at which step and what to look at."""


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


def main(argv: list[str] | None = None, echo: Echo = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.scheduler_deploy", description=__doc__.split("\n")[0])
    parser.add_argument("--lab", type=Path, help="lab definition (default: lab.yaml)")
    parser.add_argument("--render-only", type=Path, metavar="DIR",
                        help="write the manifests that would be applied to DIR and stop")
    args = parser.parse_args(argv)
    try:
        lab = load_lab(args.lab)
    except LabError as err:
        print(err, file=sys.stderr)
        return 2
    from labkit.image import image_ref

    image = image_ref(lab.scheduler.image)
    manifests = render_manifests(lab, image)
    if args.render_only:
        for path in write_manifests(manifests, args.render_only):
            echo(f"wrote {path}")
        return 0
    raise SystemExit("applying is not wired yet")


if __name__ == "__main__":
    sys.exit(main())
