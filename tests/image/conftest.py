"""Fixtures for the image suite: a local base image, private buildah storage, a private containerd.

See tests/image/base.py for the stand-in base image.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from labdef.lab import load_lab
from labkit import lab_plugins
from labkit.image import BaseImage, Builder, BuiltImage, build_image
from tests.image.base import (
    Containerd,
    check_image_tools,
    private_containerd,
    shared_buildah_and_base,
)

PLUGIN_FOLDERS = lab_plugins.folders(load_lab())  # the default lab's: what deploy-scheduler ships


@pytest.fixture(scope="session")
def image_tools() -> None:
    check_image_tools()


@pytest.fixture(scope="session")
def buildah(image_tools: None) -> Builder:
    return shared_buildah_and_base()[0]


@pytest.fixture(scope="session")
def local_base(image_tools: None) -> BaseImage:
    return shared_buildah_and_base()[1]


@pytest.fixture(scope="session")
def built(buildah: Builder, local_base: BaseImage, tmp_path_factory) -> BuiltImage:
    """The scheduler image built once for the suite, with the default lab's plugin folders in it."""
    out = tmp_path_factory.mktemp("images")
    lines: list[str] = []
    started = time.monotonic()
    image = build_image(out, base=local_base, builder=buildah, log=lines.append, plugins=PLUGIN_FOLDERS)
    print(f"\nbuild: {image.ref} with {image.builder} in {image.seconds:.1f}s "
          f"(with context and wheels {time.monotonic() - started:.1f}s)")
    return image


@pytest.fixture
def containerd(image_tools: None, tmp_path: Path) -> Iterator[Containerd]:
    with private_containerd(tmp_path) as running:
        yield running
