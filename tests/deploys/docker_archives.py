"""Docker-archives written by tests, in the layout `buildah push docker-archive:` and `docker save` write:
manifest.json naming `<hex>.json` (the config) and `<hex>.tar` (uncompressed layers, hex = their sha256),
the config's rootfs.diff_ids listing the layers' digests in order."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path


def layer_tar(files: dict[str, bytes]) -> bytes:
    """An image layer: a tar of `files` (path -> content)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_docker_archive(dest: Path, ref: str, layers: list[bytes], config: dict | None = None) -> Path:
    """A single-image docker-archive of `layers` (bytes as stored), tagged `ref`."""
    config = dict(config or {"architecture": "amd64", "os": "linux", "config": {}})
    diff_ids = [f"sha256:{hashlib.sha256(layer).hexdigest()}" for layer in layers]
    config["rootfs"] = {"type": "layers", "diff_ids": diff_ids}
    config_bytes = json.dumps(config).encode()
    config_name = f"{hashlib.sha256(config_bytes).hexdigest()}.json"
    layer_names = [f"{digest[7:]}.tar" for digest in diff_ids]
    with tarfile.open(dest, "w") as tar:
        for name, layer in dict(zip(layer_names, layers)).items():
            _add(tar, name, layer)
        _add(tar, config_name, config_bytes)
        _add(tar, "manifest.json", json.dumps([{"Config": config_name, "RepoTags": [ref],
                                                 "Layers": layer_names}]).encode())
    return dest


def derive_archive(base: Path, dest: Path, ref: str, extra_layer: bytes) -> Path:
    """A new image: every layer of the docker-archive `base` plus `extra_layer` on top (what a rebuild after a
    change to the last COPY produces, as far as the archive goes)."""
    with tarfile.open(base) as tar:
        entry = json.load(tar.extractfile("manifest.json"))[0]  # type: ignore[arg-type]
        config = json.load(tar.extractfile(entry["Config"]))  # type: ignore[arg-type]
        layers = [tar.extractfile(member).read() for member in entry["Layers"]]  # type: ignore[union-attr]
    config["history"] = [*config.get("history", []), {"created_by": "test: one more layer"}]
    return write_docker_archive(dest, ref, [*layers, extra_layer], config)
