"""Helpers shared by the image suite and the system suite's side-load test.

The public base (python:3.12-slim by digest) cannot be pulled on these machines, so the base is made
locally: a Debian bookworm minbase from debootstrap plus Debian's python3, python3-venv and
python-is-python3, committed into a buildah store of the test's own. That base is a STAND-IN for the
public one; everything after it (the Containerfile, the wheels, buildah, the docker-archive, containerd's
import and runc) is the real thing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from labkit.image import BaseImage, Builder

BASE_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
BASE_REF = "localhost/kubelab-test-base:bookworm"
MIRROR = os.environ.get("KUBELAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
IMAGE_TOOLS = ("buildah", "containerd", "ctr", "runc", "debootstrap")
# Not needed to run Python: left out of the stand-in base to keep the archive small.
PRUNE = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt",
         "var/lib/apt/lists")


def unavailable(reason: str) -> None:
    """Skip, or fail under CI where every suite must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"cannot run under CI: {reason} (scripts/install-test-deps.sh installs the tools)")
    pytest.skip(reason)


def check_image_tools() -> None:
    if os.geteuid() != 0:
        unavailable("needs root (buildah, containerd and runc manage mounts and cgroups)")
    missing = [tool for tool in IMAGE_TOOLS if not shutil.which(tool)]
    if missing:
        unavailable(f"missing tools: {', '.join(missing)}")


def run(cmd: list[str], **kwargs) -> str:
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def private_buildah(root: Path) -> Builder:
    """buildah with its own storage under root; overlay when the kernel allows it here, else vfs."""
    for driver in ("overlay", "vfs"):
        args = ("--root", str(root / driver / "root"), "--runroot", str(root / driver / "run"),
                "--storage-driver", driver)
        if subprocess.run(["buildah", *args, "info"], check=False, capture_output=True).returncode == 0:
            return Builder("buildah", args)
    raise AssertionError("buildah works with neither the overlay nor the vfs storage driver here")


def debian_python_base(buildah: Builder, workdir: Path) -> BaseImage:
    """Debian bookworm + python3 from debootstrap, committed as BASE_REF in buildah's store."""
    rootfs = workdir / "rootfs"
    run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(rootfs), MIRROR])
    version = run(["chroot", str(rootfs), "python3", "-c",
                   "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"]).strip()
    for part in PRUNE:
        shutil.rmtree(rootfs / part, ignore_errors=True)
    b = ["buildah", *buildah.global_args]
    container = run([*b, "from", "scratch"]).strip()
    try:
        mount = run([*b, "mount", container]).strip()
        run(["cp", "-a", f"{rootfs}/.", mount])
        run([*b, "umount", container])
        run([*b, "config", "--env", "PATH=/usr/local/bin:/usr/bin:/bin", container])
        run([*b, "commit", "--quiet", container, BASE_REF])
    finally:
        subprocess.run([*b, "rm", container], check=False, capture_output=True)
    shutil.rmtree(rootfs, ignore_errors=True)
    return BaseImage(BASE_REF, version)
