"""What `./lab deploy-scheduler` does, step by step (see the package's docstring)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from pyinfra.api import Inventory

from labdef.lab import Lab
from labkit.console import Echo
from labkit.image import image_ref
from labkit.kube import Kube
from labkit.paths import LabPaths
from labkit.pyinfra_run import lab_hosts
from labkit.scheduler_deploy.apply import apply
from labkit.scheduler_deploy.image_delivery import ensure_image, side_load
from labkit.scheduler_deploy.manifests import render_manifests, write_extender_mode_configs, write_manifests
from labkit.scheduler_deploy.rollout import wait_for_rollout


def deploy_scheduler(lab: Lab, kubeconfig: Path, inventory: Inventory, image_dir: Path,
                     timeout: float = 300, echo: Echo = print) -> dict[str, Any]:
    """Everything `invoke deploy-scheduler` does; returns what happened at each step."""
    image = ensure_image(lab, inventory, image_dir, echo)
    started = time.monotonic()
    nodes = side_load(inventory, image, echo)
    side_load_seconds = time.monotonic() - started
    with contextlib.closing(Kube.from_kubeconfig(kubeconfig)) as kube:
        applied = apply(kube, render_manifests(lab, image.ref), echo)
        wait_for_rollout(kube, lab, timeout, echo=echo)
    return {"image": image, "nodes": nodes, "side_load_seconds": side_load_seconds, "applied": applied}


def run_verb(lab: Lab, lab_file: Path, kubeconfig: Path | None = None, render_only: Path | None = None,
             inventory_file: str | Path | None = None, timeout: float = 300, echo: Echo = print) -> None:
    """What `./lab deploy-scheduler` does; with `render_only`, only write the manifests there (in extender
    mode also kube-scheduler's and the extender's configurations, each alone, to run them oneself)."""
    if render_only:
        for path in write_manifests(render_manifests(lab, image_ref(lab.scheduler.image)), render_only):
            echo(f"wrote {path}")
        if lab.scheduler.mode == "extender":
            kube_scheduler, extender = write_extender_mode_configs(lab, render_only)
            echo(f"wrote {kube_scheduler} (for kube-scheduler --config) and {extender} (for `python -m scheduler "
                 f"extender --config {extender} --kubeconfig FILE --listen 127.0.0.1:{lab.scheduler.extender.port}`)")
        return
    paths = LabPaths.for_lab(lab.name)
    deploy_scheduler(lab, kubeconfig or paths.kubeconfig, lab_hosts(lab, lab_file, inventory_file),
                     paths.state_dir / "images", timeout, echo)
