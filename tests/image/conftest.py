"""Fixtures for the image suite: a local base image, private buildah storage, a private containerd.

See tests/image/base.py for the stand-in base image.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from labkit.image import BaseImage, Builder
from tests.image.base import (
    Containerd,
    check_image_tools,
    private_containerd,
    shared_buildah_and_base,
)


@pytest.fixture(scope="session")
def image_tools() -> None:
    check_image_tools()


@pytest.fixture(scope="session")
def buildah(image_tools: None) -> Builder:
    return shared_buildah_and_base()[0]


@pytest.fixture(scope="session")
def local_base(image_tools: None) -> BaseImage:
    return shared_buildah_and_base()[1]


@pytest.fixture
def containerd(image_tools: None, tmp_path: Path) -> Iterator[Containerd]:
    with private_containerd(tmp_path) as running:
        yield running
