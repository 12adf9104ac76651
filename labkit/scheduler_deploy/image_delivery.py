"""The scheduler image on the nodes: built on the host (or, without a build tool there, in the control-plane
VM) and side-loaded into every node's containerd, both through labkit.pyinfra_run."""

from __future__ import annotations

import platform
import tempfile
import time
from pathlib import Path

from pyinfra.api import Inventory
from pyinfra.facts.server import Arch

from deploys.image_archive import ArchiveError, Blob, ImageArchive, read_archive
from deploys.scheduler_image import build_scheduler_image_in_vm, side_load_scheduler_image
from labdef.lab import Lab
from labkit import lab_plugins
from labkit.console import Echo
from labkit.image import (
    DEFAULT_PLATFORM,
    BuildPlan,
    BuiltImage,
    build_planned,
    context_tarball,
    find_builder,
    plan_build,
)
from labkit.pyinfra_run import connected
from labkit.scheduler_deploy import DeployError

# A layer the node listed a moment before can be gone by the import (its last image removed meanwhile).
STALE_LAYER_HINT = ("if containerd answered that some content was not found, run deploy-scheduler again: the next "
                    "run sends every layer the node then lacks")


def side_load(inventory: Inventory, image: BuiltImage, echo: Echo = print) -> dict[str, str]:
    """Import the image on every node; returns node -> "imported" or "present" (already had it). Each node is
    sent only the layers its containerd lacks."""
    archive = read_image_archive(image.archive)
    report: dict[str, str] = {}
    sent: dict[str, list[Blob]] = {}
    with tempfile.TemporaryDirectory(prefix=".side-load-", dir=image.archive.parent) as work_dir, \
            connected(inventory, echo) as hosts:
        hosts.run("side-loading the scheduler image", side_load_scheduler_image, archive, image.ref, work_dir,
                  report, sent, hint=STALE_LAYER_HINT)
    total = sum(layer.size for layer in archive.layers)
    for node, outcome in sorted(report.items()):
        if outcome == "imported":
            layers = sent.get(node, [])
            echo(f"{node}: {image.ref} imported (sent {len(layers)} of {len(archive.layers)} layers, "
                 f"{_mb(sum(layer.size for layer in layers))} of {_mb(total)})")
        else:
            echo(f"{node}: {image.ref} already present, skipped")
    return report


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def read_image_archive(path: Path) -> ImageArchive:
    try:
        return read_archive(path)
    except ArchiveError as err:
        raise DeployError(str(err)) from None


def build_in_vm(inventory: Inventory, plan: BuildPlan, echo: Echo = print) -> BuiltImage:
    """Build on the control plane: the host has none of docker, podman or buildah."""
    echo(f"no working docker, podman or buildah here: building {plan.ref} on the control plane")
    tarball = context_tarball(plan)
    started = time.monotonic()
    partial = plan.archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    with connected(inventory, echo) as hosts:
        hosts.run("building the scheduler image on the control plane", build_scheduler_image_in_vm,
                    str(tarball), plan.ref, plan.base.ref, plan.base.python_version, plan.platform, str(partial))
    if not partial.exists():
        raise DeployError("the build on the control plane produced no archive: does the inventory have a host "
                          "with node role control-plane?")
    partial.rename(plan.archive)
    return plan.result("vm", time.monotonic() - started)


# `uname -m` -> the image platform; VirtualBox and lxc machines have the host's architecture (an Apple
# silicon Mac runs arm64 guests), machines of an SSH inventory their own.
PLATFORMS = {"x86_64": "linux/amd64", "amd64": "linux/amd64", "aarch64": "linux/arm64", "arm64": "linux/arm64"}


def platform_for(machines: dict[str, str | None]) -> str:
    """The one image platform for nodes with these `uname -m` answers; refused when they differ, since one
    image goes to every node."""
    by_platform: dict[str, list[str]] = {}
    for node, uname in sorted(machines.items()):
        image_platform = PLATFORMS.get((uname or "").strip())
        if image_platform is None:
            raise DeployError(f"{node}: machine architecture {uname!r} (uname -m); the scheduler image is built "
                              "for x86_64 (linux/amd64) and aarch64 (linux/arm64) nodes only")
        by_platform.setdefault(image_platform, []).append(node)
    if len(by_platform) != 1:
        found = "; ".join(f"{name}: {', '.join(nodes)}" for name, nodes in sorted(by_platform.items()))
        raise DeployError(f"the lab's nodes differ in architecture ({found or 'no nodes'}): one scheduler image is "
                          "side-loaded to every node, so give the lab machines of one architecture")
    return next(iter(by_platform))


def host_platform() -> str:
    """The platform of this host's architecture: what its VirtualBox and lxc machines run (`--render-only`
    names the image by it without asking the nodes)."""
    return PLATFORMS.get(platform.machine(), DEFAULT_PLATFORM)


def node_platform(inventory: Inventory, echo: Echo = print) -> str:
    """The image platform the lab's nodes run, asked of the nodes themselves."""
    with connected(inventory, echo) as hosts:
        return platform_for(hosts.facts(Arch))


def ensure_image(lab: Lab, inventory: Inventory, out_dir: Path, echo: Echo = print,
                 image_platform: str = DEFAULT_PLATFORM) -> BuiltImage:
    """The archive for the scheduler's current content: reused when built before, else built where a tool
    works (build tools are probed only when there is something to build)."""
    plan = plan_build(out_dir, lab.scheduler.image, platform=image_platform, plugins=lab_plugins.folders(lab))
    if plan.done:
        echo(f"image {plan.ref} already built: {plan.archive}")
        return plan.result("cached", 0.0)
    builder = find_builder()
    image = build_in_vm(inventory, plan, echo) if builder is None else build_planned(plan, builder, echo)
    echo(f"built {image.ref} with {image.builder} in {image.seconds:.0f}s")
    return image
