"""The scheduler image built for real with buildah, imported into a real containerd, run with runc.

Stand-in: the base image (Debian bookworm + Debian's python3 via debootstrap) replaces the pinned public
python:3.12-slim, which cannot be pulled here. See conftest.py.
"""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path

import pytest

from labkit.image import DEFAULT_PLATFORM, build_image, context_tag, scheduler_version
from labkit.lab_plugins import IMAGE_PLUGINS_DIR
from tests.image.base import config_blob_digest
from tests.image.conftest import PLUGIN_FOLDERS

pytestmark = pytest.mark.image


def test_archive_is_a_single_platform_docker_archive_named_by_content(built, local_base) -> None:
    assert built.builder == "buildah"
    context = Path(built.archive).parent / "context"
    assert built.ref == f"localhost/kubelab-scheduler:{context_tag(context, local_base, DEFAULT_PLATFORM)}"
    with tarfile.open(built.archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        index = json.load(tar.extractfile("index.json")) if "index.json" in tar.getnames() else None
        config = json.load(tar.extractfile(manifest[0]["Config"]))
    assert len(manifest) == 1 and manifest[0]["RepoTags"] == [built.ref]
    assert index is None or len(index["manifests"]) == 1  # an OCI index naming one image, one platform
    assert config["architecture"] == DEFAULT_PLATFORM.split("/")[1]
    assert built.image_id == config_blob_digest(built.archive)


def test_containerd_imports_and_runs_the_image(built, containerd) -> None:
    started = time.monotonic()
    containerd.ctr("images", "import", str(built.archive))
    print(f"\nimport: {time.monotonic() - started:.1f}s")
    listed = containerd.ctr("images", "ls", "--quiet")
    assert built.ref in listed.split()

    version = containerd.ctr("run", "--rm", built.ref, "version-check", "python", "-m", "scheduler", "--version")
    assert scheduler_version() in version
    uid = containerd.ctr("run", "--rm", built.ref, "uid-check", "id", "-u")
    assert uid.strip() == "65532"
    # the lab's plugin folders, where the manifests' --plugins point, load as the scheduler loads them
    args = [arg for folder in PLUGIN_FOLDERS for arg in ("--plugins", f"{IMAGE_PLUGINS_DIR}/{folder.name}")]
    loaded = containerd.ctr("run", "--rm", built.ref, "plugins-check", "python", "-c",
                            "import sys; from scheduler.framework import load_registry; r = load_registry(sys.argv[2::2]); "
                            "print(sorted({r.source_of(name) for name in r}))", *args)
    for folder in PLUGIN_FOLDERS:
        assert f"'{IMAGE_PLUGINS_DIR}/{folder.name}'" in loaded, loaded


def test_rebuilding_unchanged_content_reuses_the_archive(built, buildah, local_base) -> None:
    lines: list[str] = []
    again = build_image(Path(built.archive).parent, base=local_base, builder=buildah, log=lines.append,
                        plugins=PLUGIN_FOLDERS)
    assert again.builder == "cached"
    assert (again.ref, again.image_id) == (built.ref, built.image_id)


def test_a_users_plugin_folder_ships_in_the_image_and_keeps_its_contract_there(buildah, local_base, containerd,
                                                                               tmp_path) -> None:
    """The tutorial's plugin (examples/node_cost, copied to a folder outside the repository as a user keeps it)
    built into the image as deploy-scheduler builds it, then, inside the image run with runc, loaded from where the
    manifests' --plugins point and checked by `python -m scheduler.testing check`."""
    import shutil

    from labkit.paths import PROJECT_ROOT

    folder = tmp_path / "my-lab" / "node_cost"
    shutil.copytree(PROJECT_ROOT / "examples" / "node_cost", folder)
    image = build_image(tmp_path / "images", base=local_base, builder=buildah, log=lambda line: None,
                        plugins=[*PLUGIN_FOLDERS, folder])
    containerd.ctr("images", "import", str(image.archive))
    checked = containerd.ctr("run", "--rm", image.ref, "user-plugin-check", "python", "-m", "scheduler.testing",
                             "check", f"{IMAGE_PLUGINS_DIR}/node_cost")
    assert "ok   NodeCost" in checked and "1 of 1 plugin(s) pass" in checked, checked
