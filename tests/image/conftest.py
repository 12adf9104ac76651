"""Fixtures for the image suite: a local base image, private buildah storage, a private containerd.

See tests/image/base.py for the stand-in base image.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labkit.image import BaseImage, Builder
from tests.image.base import check_image_tools, debian_python_base, private_buildah, run


@pytest.fixture(scope="session")
def image_tools() -> None:
    check_image_tools()


@pytest.fixture(scope="session")
def buildah(image_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Builder:
    return private_buildah(tmp_path_factory.mktemp("buildah"))


@pytest.fixture(scope="session")
def local_base(buildah: Builder, tmp_path_factory: pytest.TempPathFactory) -> BaseImage:
    return debian_python_base(buildah, tmp_path_factory.mktemp("base"))


@dataclass
class Containerd:
    """A containerd of the test's own: root, state, socket and opt directories under a temp dir."""

    socket: Path

    def ctr(self, *args: str, timeout: float = 300) -> str:
        return run(["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args], timeout=timeout)


@pytest.fixture
def containerd(image_tools: None, tmp_path: Path) -> Iterator[Containerd]:
    # A short path: the socket path must fit in sun_path (108 bytes).
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"kubelab-ctd-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    socket = home / "containerd.sock"
    config = tmp_path / "containerd.toml"
    config.write_text(f"""version = 2
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
    proc = subprocess.Popen(["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("containerd did not start:\n" + (tmp_path / "containerd.log").read_text())
            time.sleep(0.1)
        yield Containerd(socket)
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
