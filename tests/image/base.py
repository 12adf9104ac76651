"""Helpers shared by the image suite and the system suite's side-load test.

The public base (python:3.12-slim by digest) cannot be pulled on these machines, so the base is made
locally: a Debian bookworm minbase from debootstrap plus Debian's python3, python3-venv and
python-is-python3, committed into a buildah store of the test's own. That base is a STAND-IN for the
public one; everything after it (the Containerfile, the wheels, buildah, the docker-archive, containerd's
import and runc) is the real thing.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from labkit.image import BaseImage, Builder
from tests.debian_testing import debian_testing_bin
from tests.unavailable import skip_or_fail

BASE_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
BASE_REF = "localhost/kubelab-test-base:bookworm"
MIRROR = os.environ.get("KUBELAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
IMAGE_TOOLS = ("buildah", "containerd", "ctr", "runc", "debootstrap")
# Not needed to run Python: left out of the stand-in base to keep the archive small.
PRUNE = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt",
         "var/lib/apt/lists")


def check_image_tools() -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root (buildah, containerd and runc manage mounts and cgroups)")
    missing = [tool for tool in IMAGE_TOOLS if not shutil.which(tool)]
    if missing:
        skip_or_fail(f"missing tools: {', '.join(missing)}")


def run(cmd: list[str], **kwargs) -> str:
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def config_blob_digest(archive: Path) -> str:
    """`sha256:` of the config blob a docker-archive holds, hashed here: the image ID containerd will show."""
    with tarfile.open(archive) as tar:
        config = json.load(tar.extractfile("manifest.json"))[0]["Config"]
        return f"sha256:{hashlib.sha256(tar.extractfile(config).read()).hexdigest()}"


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


_SHARED: dict[str, tuple[Builder, BaseImage]] = {}


def shared_buildah_and_base() -> tuple[Builder, BaseImage]:
    """One private buildah store with the stand-in base per test process (the image suite and the system
    suite's side-load test both build on it; debootstrap takes about a minute)."""
    if "pair" not in _SHARED:
        root = Path(tempfile.mkdtemp(prefix="kubelab-image-test-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        builder = private_buildah(root / "buildah")
        _SHARED["pair"] = (builder, debian_python_base(builder, root / "base"))
    return _SHARED["pair"]


def containerd2_bin() -> Path:
    """The folder holding containerd 2.x, its shim and its ctr, or skip (fail under CI) without it."""
    return debian_testing_bin("containerd")


@dataclass
class Containerd:
    """A containerd of the test's own: root, state, socket and opt directories under a temp dir. ``bin_dir``:
    the folder of the containerd build it runs (its ctr and shim too); None: the host's, from PATH."""

    socket: Path
    bin_dir: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment in which a plain `ctr -n k8s.io ...` (as the deploys run it) reaches this one."""
        path = os.environ.get("PATH", "")
        return {**os.environ, "CONTAINERD_ADDRESS": str(self.socket),
                "PATH": f"{self.bin_dir}:{path}" if self.bin_dir else path}

    @property
    def version(self) -> str:
        return self.ctr("version").split("Server:")[1].split("Version:")[1].split()[0]

    def ctr(self, *args: str, timeout: float = 300) -> str:
        ctr = str(self.bin_dir / "ctr") if self.bin_dir else "ctr"
        return run([ctr, "--address", str(self.socket), "--namespace", "k8s.io", *args], timeout=timeout)


@contextlib.contextmanager
def private_containerd(tmp_path: Path, bin_dir: Path | None = None,
                       config_text: str | None = None) -> Iterator[Containerd]:
    """containerd of the test's own. ``config_text``: a whole config to run instead of the minimal one (such as
    the deploys' config for nodes); its root, state, socket and opt folder are moved under a temp dir."""
    # A short path: the socket path must fit in sun_path (108 bytes).
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"kubelab-ctd-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    socket = home / "containerd.sock"
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "containerd.toml"
    config.write_text(_relocated_opt(config_text, home) if config_text is not None else f"""version = 2
root = "{home}/root"
state = "{home}/state"
# the CRI plugin would want CNI and a kubelet-style setup: the test talks to containerd's own API
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{home}/opt"
""")
    log = (tmp_path / "containerd.log").open("w")
    running = Containerd(socket, bin_dir)
    # The shim is found on PATH: the one of the same build.
    # The flags override a whole config's root, state and socket (its ttrpc socket follows the socket).
    proc = subprocess.Popen([str(bin_dir / "containerd") if bin_dir else "containerd", "--config", str(config),
                             "--root", f"{home}/root", "--state", f"{home}/state", "--address", str(socket)],
                            stdout=log, stderr=subprocess.STDOUT, env=running.env)
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("containerd did not start:\n" + (tmp_path / "containerd.log").read_text())
            time.sleep(0.1)
        yield running
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        subprocess.run(["umount", "-R", str(home / "state")], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def _relocated_opt(config_text: str, home: Path) -> str:
    """``config_text`` with the opt plugin's folder (binaries and libraries it manages) under ``home``."""
    moved = re.sub(r"""^([ \t]*path[ \t]*=[ \t]*)["']/opt/containerd["']""", rf"\1'{home}/opt'", config_text,
                   flags=re.MULTILINE)
    if moved == config_text:
        raise AssertionError("no opt plugin path '/opt/containerd' in the config: the test needs updating")
    return moved
