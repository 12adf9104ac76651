"""What side-loading sends a node (deploys/image_archive.py, deploys/scheduler_image._upload_for): the pure
parts, on small docker-archives written here. tests/image/test_layer_delta.py imports the result into a real
containerd; the listings below have the columns of `ctr images ls` and `ctr content ls` (containerd 1.6.20,
cmd/ctr/commands/images/images.go and content/content.go)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile

import pytest

from deploys.image_archive import (
    DOCKER_MANIFEST,
    LAYER_GZIP,
    LAYER_TAR,
    ArchiveError,
    held_blobs,
    manifest_bytes,
    normalized_name,
    read_archive,
    write_oci_archive,
)
from deploys.scheduler_image import ContainerdHeldBlobs, _upload_for
from tests.deploys.docker_archives import layer_tar, write_docker_archive

REF = "localhost/kubelab-scheduler:abc"


@pytest.fixture
def archive(tmp_path):
    layers = [layer_tar({"base.txt": b"base" * 1000}), layer_tar({"deps.txt": b"deps"}),
              gzip.compress(layer_tar({"app.txt": b"app"}), mtime=0)]
    return read_archive(write_docker_archive(tmp_path / "image.tar", REF, layers))


def digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def test_reading_hashes_each_blob_and_tells_compressed_layers(archive) -> None:
    assert archive.repo_tags == (REF,)
    assert [layer.media_type for layer in archive.layers] == [LAYER_TAR, LAYER_TAR, LAYER_GZIP]
    with tarfile.open(archive.path) as tar:
        entry = json.load(tar.extractfile("manifest.json"))[0]
        assert archive.image_id == digest(tar.extractfile(entry["Config"]).read())
        assert [layer.digest for layer in archive.layers] == [
            digest(tar.extractfile(name).read()) for name in entry["Layers"]]
    assert archive.platform == {"architecture": "amd64", "os": "linux"}


def test_the_manifest_is_containerds_compact_docker_schema_2(archive) -> None:
    text = manifest_bytes(archive).decode()
    assert text.startswith('{"schemaVersion":2,"mediaType":"' + DOCKER_MANIFEST + '","config":{"mediaType":')
    assert " " not in text
    assert json.loads(text)["layers"][2] == {"mediaType": LAYER_GZIP, "digest": archive.layers[2].digest,
                                             "size": archive.layers[2].size}


def test_the_oci_archive_carries_index_manifest_config_and_only_the_missing_layers(archive, tmp_path) -> None:
    held = {archive.layers[0].digest, archive.layers[1].digest}
    carried = write_oci_archive(archive, REF, held, tmp_path / "delta.tar")
    assert carried == [archive.layers[2]]
    manifest = manifest_bytes(archive)
    with tarfile.open(tmp_path / "delta.tar") as tar:
        names = set(tar.getnames())
        index = json.load(tar.extractfile("index.json"))
        assert json.load(tar.extractfile("oci-layout")) == {"imageLayoutVersion": "1.0.0"}
        assert tar.extractfile(f"blobs/sha256/{archive.layers[2].digest[7:]}").read() == gzip.compress(
            layer_tar({"app.txt": b"app"}), mtime=0)
    assert names == {"oci-layout", "index.json", f"blobs/sha256/{digest(manifest)[7:]}",
                     f"blobs/sha256/{archive.image_id[7:]}", f"blobs/sha256/{archive.layers[2].digest[7:]}"}
    [entry] = index["manifests"]
    assert (entry["mediaType"], entry["digest"], entry["size"]) == (DOCKER_MANIFEST, digest(manifest), len(manifest))
    assert entry["annotations"] == {"io.containerd.image.name": REF, "org.opencontainers.image.ref.name": "abc"}
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}


def test_a_node_holding_no_layer_gets_the_docker_archive_itself(archive, tmp_path) -> None:
    assert _upload_for(archive, REF, set(), tmp_path) == (archive.path, list(archive.layers))
    assert _upload_for(archive, REF, {"sha256:" + "f" * 64}, tmp_path) == (archive.path, list(archive.layers))


def test_nodes_in_the_same_state_share_one_oci_archive(archive, tmp_path) -> None:
    held = {archive.layers[0].digest}
    first, carried = _upload_for(archive, REF, held, tmp_path)
    again, carried_again = _upload_for(archive, REF, held | {"sha256:" + "f" * 64}, tmp_path)
    assert first == again and first.parent == tmp_path and first.name.endswith(".oci.tar")
    assert carried == carried_again == list(archive.layers[1:])
    other, _ = _upload_for(archive, REF, {archive.layers[1].digest}, tmp_path)
    assert other != first


def test_an_archive_with_a_layer_schema_2_cannot_name_goes_whole(tmp_path) -> None:
    """A zstd layer (no Docker schema 2 type): containerd's importer still reads the docker-archive."""
    zstd_frame = b"\x28\xb5\x2f\xfd" + b"\0" * 600
    archive = read_archive(write_docker_archive(tmp_path / "image.tar", REF, [layer_tar({"a": b"a"}), zstd_frame]))
    assert not archive.splittable
    assert _upload_for(archive, REF, {archive.layers[0].digest}, tmp_path) == (archive.path, list(archive.layers))
    with pytest.raises(ArchiveError, match="send the whole archive"):
        write_oci_archive(archive, REF, {archive.layers[0].digest}, tmp_path / "delta.tar")


def test_a_repeated_layer_saved_as_a_symlink_is_read_through_the_link(tmp_path) -> None:
    """`docker save` before 25 links a repeated layer to its first copy: the blob is the target's bytes."""
    layer = layer_tar({"same": b"same" * 100})
    path = write_docker_archive(tmp_path / "image.tar", REF, [layer, layer_tar({"top": b"top"})])
    with tarfile.open(path) as tar:
        members = {m.name: (m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}
    [entry] = json.loads(members["manifest.json"][1])
    link = tarfile.TarInfo("dup/layer.tar")
    link.type, link.linkname = tarfile.SYMTYPE, f"../{entry['Layers'][0]}"
    entry["Layers"] = [entry["Layers"][0], "dup/layer.tar", entry["Layers"][1]]
    linked = tmp_path / "linked.tar"
    with tarfile.open(linked, "w") as tar:
        for name, (info, data) in members.items():
            if name == "manifest.json":
                data = json.dumps([entry]).encode()
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        tar.addfile(link)
    image = read_archive(linked)
    assert [layer.size for layer in image.layers] == [len(layer), len(layer), image.layers[2].size]
    assert image.layers[0].digest == image.layers[1].digest == digest(layer)
    carried = write_oci_archive(image, REF, {image.layers[2].digest}, tmp_path / "delta.tar")
    assert carried == [image.layers[0]]  # once, its first copy
    with tarfile.open(tmp_path / "delta.tar") as tar:
        assert tar.extractfile(f"blobs/sha256/{digest(layer)[7:]}").read() == layer


@pytest.mark.parametrize(("ref", "name"), [
    ("localhost/kubelab-scheduler:1", "localhost/kubelab-scheduler:1"),
    ("kubelab-scheduler:1", "docker.io/library/kubelab-scheduler:1"),
    ("me/kubelab-scheduler:1", "docker.io/me/kubelab-scheduler:1"),
    ("registry.example:5000/lab/sched:1", "registry.example:5000/lab/sched:1"),
    ("localhost:5000/sched:1", "localhost:5000/sched:1"),
])
def test_names_are_normalized_as_containerd_and_the_kubelet_name_images(ref, name) -> None:
    assert normalized_name(ref) == name


INDEX, MANIFEST, CONFIG, LAYER, ORPHAN, GONE = (f"sha256:{c * 64}" for c in "123456")
IMAGES_LS = ("REF                              TYPE                                                 DIGEST   SIZE     "
             "PLATFORMS   LABELS \n"
             f"registry.k8s.io/pause:3.10       application/vnd.oci.image.index.v1+json             {INDEX} 311.6 KiB "
             "linux/amd64 io.cri-containerd.image=managed \n"
             f"localhost/gone:1                 application/vnd.docker.distribution.manifest.v2+json {GONE} 1.2 MiB "
             "linux/amd64 - \n")
CONTENT_LS = ("DIGEST\tSIZE\tAGE\tLABELS\n"
              f"{INDEX}\t1.2kB\t2 hours\tcontainerd.io/gc.ref.content.m.0={MANIFEST}\n"
              f"{MANIFEST}\t527B\t2 hours\tcontainerd.io/gc.ref.content.config={CONFIG},"
              f"containerd.io/gc.ref.content.l.0={LAYER}\n"
              f"{CONFIG}\t1.5kB\t2 hours\tcontainerd.io/gc.ref.snapshot.overlayfs=sha256:{'9' * 64}\n"
              f"{LAYER}\t311.6kB\t2 hours\tcontainerd.io/uncompressed=sha256:{'8' * 64}\n"
              f"{ORPHAN}\t86.2MB\t3 days\t-\n")


def test_only_blobs_an_image_reaches_count_as_held() -> None:
    assert held_blobs(IMAGES_LS, CONTENT_LS) == {INDEX, MANIFEST, CONFIG, LAYER}
    assert held_blobs("REF TYPE DIGEST SIZE PLATFORMS LABELS\n", CONTENT_LS) == set()
    assert held_blobs("", "") == set()


def test_the_fact_reads_both_listings_from_its_one_command() -> None:
    output = [*IMAGES_LS.splitlines(), "---", *CONTENT_LS.splitlines()]
    assert ContainerdHeldBlobs().process(output) == {INDEX, MANIFEST, CONFIG, LAYER}
    assert ContainerdHeldBlobs().process(["---"]) == set()
    assert ContainerdHeldBlobs.default() == set()  # no ctr on the node: send everything


def test_a_file_that_is_not_a_docker_archive_is_named(tmp_path) -> None:
    bogus = tmp_path / "image.tar"
    bogus.write_bytes(b"not a tar")
    with pytest.raises(ArchiveError, match=f"{bogus}: not a docker-archive"):
        read_archive(bogus)
