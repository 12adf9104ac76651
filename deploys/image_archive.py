"""A docker-archive's image as blobs, and an OCI archive that leaves out the blobs a node already holds.

Side-loading sends each node only what its containerd lacks: after a change to scheduler/ only the image's
last layers differ, so a round uploads a few hundred KB instead of the whole image (about 255 MB).

Why an OCI archive may leave layers out and a docker-archive may not (containerd's
images/archive/importer.go, the same in 1.6 and 2.2): for a docker-archive the importer resolves every
layer its manifest.json names from the tar itself ("layer ... not found" otherwise); for an OCI layout it
writes whatever blobs the tar holds into the content store and returns index.json. The import then reads
only the index, the manifest and the config; unpacking reads a layer from the content store, and only when
its snapshot is not there yet. So the OCI archive carries the index, manifest and config always, and every
layer the node's content store does not hold.

The manifest written here is what containerd's importer writes for a docker-archive (Docker schema 2,
compact JSON, the same media types): for the uncompressed archives buildah, podman and `docker save` before
25 write, byte for byte the manifest of a whole import (the image suite checks it on containerd 1.6.20 and 2.1.9). In
every case the config, and so the image ID the kubelet sees, is the archive's own.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from labdef.errors import UserError

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER_TAR = "application/vnd.docker.image.rootfs.diff.tar"
LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
IMAGE_NAME = "io.containerd.image.name"            # containerd names the image after this annotation
REF_NAME = "org.opencontainers.image.ref.name"


class ArchiveError(UserError):
    """The file is not a single-image docker-archive; the message names it."""


@dataclass(frozen=True)
class Blob:
    member: str       # its path in the docker-archive
    digest: str       # sha256:<hex> of its bytes, as the content store keys it
    size: int
    media_type: str | None  # None: a layer Docker schema 2 has no type for (zstd...)


@dataclass(frozen=True)
class ImageArchive:
    path: Path
    repo_tags: tuple[str, ...]
    config: Blob
    layers: tuple[Blob, ...]
    platform: dict[str, str]   # os, architecture (and variant) from the config

    @property
    def image_id(self) -> str:
        return self.config.digest

    @property
    def splittable(self) -> bool:
        """Every layer is a tar or gzip: an OCI archive of part of it can be written (else the whole
        docker-archive goes, which containerd's importer reads whatever the compression)."""
        return all(layer.media_type for layer in self.layers)


def read_manifest_entry(path: Path) -> dict:
    """The one image entry of a docker-archive's manifest.json (Config, RepoTags, Layers)."""
    try:
        with tarfile.open(path) as tar:
            member = tar.extractfile("manifest.json")
            manifest = json.load(member) if member else None
    except (OSError, KeyError, tarfile.TarError, json.JSONDecodeError) as err:
        raise ArchiveError(f"{path}: not a docker-archive image tarball ({err})") from None
    if not isinstance(manifest, list) or len(manifest) != 1:
        raise ArchiveError(f"{path}: holds {len(manifest or [])} images; side-loading needs exactly one")
    return manifest[0]


def _media_type(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return LAYER_GZIP
    # An uncompressed tar has "ustar" at offset 257; anything else (zstd...) has no Docker schema 2 type.
    return LAYER_TAR if head[257:262] == b"ustar" or not head.strip(b"\0") else None


def _blob(tar: tarfile.TarFile, member: str, media_type: str | None) -> Blob:
    # extractfile follows a symlinked member (`docker save` before 25 links a repeated layer to its first
    # copy), so digest and size are taken from the bytes read, never from the member's header.
    data = tar.extractfile(member)
    if data is None:
        raise ArchiveError(f"{tar.name}: {member} named by manifest.json is not in the archive")
    digest, head = hashlib.sha256(), data.read(512)
    digest.update(head)
    size = len(head)
    while chunk := data.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return Blob(member, f"sha256:{digest.hexdigest()}", size, media_type or _media_type(head))


def read_archive(path: Path) -> ImageArchive:
    """Hash every blob of a single-image docker-archive (about a second for the scheduler's image)."""
    entry = read_manifest_entry(path)
    try:
        with tarfile.open(path) as tar:
            config = _blob(tar, entry["Config"], DOCKER_CONFIG)
            layers = tuple(_blob(tar, member, None) for member in entry.get("Layers") or [])
            config_json = json.load(tar.extractfile(entry["Config"]))  # type: ignore[arg-type]
    except (OSError, KeyError, tarfile.TarError, json.JSONDecodeError) as err:
        raise ArchiveError(f"{path}: unreadable docker-archive ({err})") from None
    platform = {key: config_json[key] for key in ("architecture", "os", "variant") if config_json.get(key)}
    return ImageArchive(path, tuple(entry.get("RepoTags") or ()), config, layers, platform)


def normalized_name(ref: str) -> str:
    """The name containerd stores an image under, as the kubelet asks for it: Docker's normalization
    (`kubelab-scheduler:1` -> `docker.io/library/kubelab-scheduler:1`; `localhost/x:1` stays)."""
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if rest else f"docker.io/library/{ref}"


def _descriptor(blob: Blob) -> dict:
    # The field order of Go's ocispec.Descriptor, so the JSON is byte for byte what containerd writes.
    return {"mediaType": blob.media_type, "digest": blob.digest, "size": blob.size}


def manifest_bytes(image: ImageArchive) -> bytes:
    """The Docker schema 2 manifest containerd's importer writes for this docker-archive."""
    manifest = {"schemaVersion": 2, "mediaType": DOCKER_MANIFEST, "config": _descriptor(image.config),
                "layers": [_descriptor(layer) for layer in image.layers]}
    return json.dumps(manifest, separators=(",", ":")).encode()


def _add(tar: tarfile.TarFile, name: str, data: bytes | io.BufferedIOBase, size: int | None = None) -> None:
    info = tarfile.TarInfo(name)
    info.mode = 0o644
    if isinstance(data, bytes):
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        info.size = size or 0
        tar.addfile(info, data)


def carried_layers(image: ImageArchive, leave_out: set[str]) -> list[Blob]:
    """The layers an archive without `leave_out` carries, each blob once (its first copy)."""
    carried: dict[str, Blob] = {}
    for layer in image.layers:
        if layer.digest not in leave_out:
            carried.setdefault(layer.digest, layer)
    return list(carried.values())


def write_oci_archive(image: ImageArchive, ref: str, leave_out: set[str], dest: Path) -> list[Blob]:
    """An OCI archive of `image` named `ref` without the layers in `leave_out` (digests); returns the
    layers it carries. Written whole or not at all."""
    if not image.splittable:
        raise ArchiveError(f"{image.path}: a layer is neither a tar nor gzip-compressed; send the whole archive")
    manifest = manifest_bytes(image)
    name = normalized_name(ref)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{
        "mediaType": DOCKER_MANIFEST, "digest": f"sha256:{hashlib.sha256(manifest).hexdigest()}",
        "size": len(manifest), "annotations": {IMAGE_NAME: name, REF_NAME: name.rpartition(":")[2]},
        "platform": image.platform}]}
    carried = carried_layers(image, leave_out)
    partial = dest.with_suffix(".partial")
    with tarfile.open(image.path) as source, tarfile.open(partial, "w") as out:
        _add(out, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add(out, "index.json", json.dumps(index).encode())
        _add(out, f"blobs/sha256/{index['manifests'][0]['digest'][7:]}", manifest)
        for blob in (image.config, *carried):
            _add(out, f"blobs/sha256/{blob.digest[7:]}", source.extractfile(blob.member), blob.size)  # type: ignore[arg-type]
    partial.rename(dest)
    return carried


def held_blobs(images_listing: str, content_listing: str) -> set[str]:
    """The blobs a containerd namespace holds for its images: everything reachable from an image's target
    through the content store's `containerd.io/gc.ref.content.*` labels, the references containerd's garbage
    collector follows. A blob no image reaches may be collected at any moment, so it does not count.

    `images_listing` is `ctr images ls` (REF TYPE DIGEST ...), `content_listing` is `ctr content ls`
    (DIGEST SIZE AGE LABELS, labels as k=v,k=v)."""
    targets = {line.split()[2] for line in images_listing.splitlines()[1:] if len(line.split()) > 2}
    children: dict[str, list[str]] = {}
    for line in content_listing.splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].startswith("sha256:"):
            children[fields[0]] = re.findall(r"containerd\.io/gc\.ref\.content[^=,]*=(sha256:[0-9a-f]{64})", line)
    held: set[str] = set()
    todo = [digest for digest in targets if digest in children]
    while todo:
        digest = todo.pop()
        if digest not in held and digest in children:
            held.add(digest)
            todo.extend(children[digest])
    return held

