"""What `./lab deploy-scheduler` does, step by step (see the package's docstring)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyinfra.api import Inventory

from labdef.lab import Lab
from labkit import lab_plugins
from labkit.console import Echo
from labkit.image import SCHEDULER_DIR, image_ref
from labkit.kube import Kube
from labkit.paths import LabPaths
from labkit.pyinfra_run import lab_hosts
from labkit.scheduler_deploy import plugin_manifests
from labkit.scheduler_deploy.apply import apply
from labkit.scheduler_deploy.image_delivery import ensure_image, host_platform, node_platform, side_load
from labkit.scheduler_deploy.manifests import render_manifests, write_extender_mode_configs, write_manifests
from labkit.scheduler_deploy.mode_switch import remove_other_mode
from labkit.scheduler_deploy.rollout import wait_for_rollout
from labkit.scheduler_deploy.watch import watch_and_deploy
from scheduler.framework import Registry


@contextlib.contextmanager
def timed(timings: dict[str, float], step: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        timings[step] = time.monotonic() - started


def timings_line(timings: dict[str, float]) -> str:
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in timings.items())
    return f"took {sum(timings.values()):.1f} s: {steps}"


def deploy_scheduler(lab: Lab, kubeconfig: Path, inventory: Inventory, image_dir: Path,
                     timeout: float = 300, echo: Echo = print, plugins: Registry | None = None,
                     folder_manifests: plugin_manifests.PluginManifests | None = None) -> dict[str, Any]:
    """Everything `invoke deploy-scheduler` does (``plugins``: the lab's, loaded, and ``folder_manifests``:
    their folders' manifests, checked; default: read here); returns what happened at each step and how long
    it took."""
    timings: dict[str, float] = {}
    if folder_manifests is None:
        folder_manifests = plugin_manifests.load(lab)
    try:
        with timed(timings, "image"):
            image = ensure_image(lab, inventory, image_dir, echo, node_platform(inventory, echo))
        with timed(timings, "side-load"):
            nodes = side_load(inventory, image, echo)
        with contextlib.closing(Kube.from_kubeconfig(kubeconfig)) as kube:
            applied = {}
            if folder_manifests:
                with timed(timings, "plugin manifests"):  # the kinds the plugins watch exist before they start
                    applied.update(plugin_manifests.apply(kube, folder_manifests, echo))
            with timed(timings, "apply"):
                applied.update(apply(kube, render_manifests(lab, image.ref, plugins), echo))
            with timed(timings, "rollout"):
                wait_for_rollout(kube, lab, timeout, echo=echo)
            removed = remove_other_mode(kube, lab, image.ref, echo)  # a few reads: not a step of its own
    finally:
        echo(timings_line(timings))  # a failed run too: where the time went up to the failure
    return {"image": image, "nodes": nodes, "side_load_seconds": timings["side-load"], "applied": applied,
            "removed": removed, "timings": timings}


def run_verb(lab: Lab, lab_file: Path, kubeconfig: Path | None = None, render_only: Path | None = None,
             inventory_file: str | Path | None = None, timeout: float = 300, echo: Echo = print,
             watch: bool = False) -> None:
    """What `./lab deploy-scheduler` does, once the lab's plugins load and its profile fits them (else a
    UserError naming the field, and nothing built, written or applied); with `render_only`, only write the manifests there (in extender
    mode also kube-scheduler's and the extender's configurations, each alone, to run them oneself; the plugin
    folders' manifests first, in one file); with
    `watch`, again on every saved change under scheduler/ or a plugin folder."""
    if render_only:
        plugins = lab_plugins.checked_registry(lab)  # a profile the plugins refuse is never written
        folder_manifests = plugin_manifests.load(lab)  # nor a plugin folder's manifest that cannot be applied
        image = image_ref(lab.scheduler.image, platform=host_platform(), plugins=lab_plugins.folders(lab))
        if folder_manifests:
            echo(f"wrote {plugin_manifests.write(folder_manifests, render_only)} (the plugin folders' crds/ and "
                 "manifests/, applied first)")
        for path in write_manifests(render_manifests(lab, image, plugins), render_only):
            echo(f"wrote {path}")
        if lab.scheduler.mode == "extender":
            kube_scheduler, extender = write_extender_mode_configs(lab, render_only)
            echo(f"wrote {kube_scheduler} (for kube-scheduler --config) and {extender} (for `python -m scheduler "
                 f"extender --config {extender} --kubeconfig FILE --listen 127.0.0.1:{lab.scheduler.extender.port}"
                 + "".join(f" --plugins {source}" for source in lab_plugins.host_sources(lab)) + "`)")
        return
    paths = LabPaths.for_lab(lab.name)

    def deploy() -> dict[str, Any]:
        # Each round: the plugin folders may have changed since the last one; nothing is built or applied
        # for a profile they refuse.
        plugins = lab_plugins.checked_registry(lab)
        folder_manifests = plugin_manifests.load(lab)
        # A fresh inventory each round: pyinfra's hosts keep the operations of the last run they were part
        # of, and a second run over the same Host objects fails on them (KeyError in State.get_op_order).
        return deploy_scheduler(lab, kubeconfig or paths.kubeconfig, lab_hosts(lab, lab_file, inventory_file),
                                paths.state_dir / "images", timeout, echo, plugins, folder_manifests)

    if watch:
        watch_and_deploy(deploy, echo, [SCHEDULER_DIR, *lab_plugins.folders(lab)])
    else:
        deploy()
