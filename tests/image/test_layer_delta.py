"""Side-loading only the layers a node lacks, against the real containerd and runc of this host.

Real: the scheduler image built by buildah (on the stand-in base, see conftest.py), containerd 1.6's
`ctr images import` of the docker-archive and of our OCI archive, `ctr images ls` / `ctr content ls` read by
the same parser the side-load's fact uses, and `ctr run`. The second image is the first plus one layer
(tests/deploys/docker_archives.derive_archive), as a rebuild after a change to scheduler/ adds new top
layers on the same base and dependency layers.
"""

from __future__ import annotations

import pytest

from deploys.image_archive import held_blobs, read_archive, write_oci_archive
from tests.deploys.docker_archives import derive_archive, layer_tar

pytestmark = pytest.mark.image

NEXT = "localhost/kubelab-delta-test:2"
PROBE = b"inner loop round 2\n"


@pytest.fixture(scope="module")
def next_archive(built, tmp_path_factory):
    """The built image plus a layer holding /kubelab-probe.txt."""
    out = tmp_path_factory.mktemp("derived")
    return read_archive(derive_archive(built.archive, out / "next.tar", NEXT, layer_tar({"kubelab-probe.txt": PROBE})))


def held(containerd) -> set[str]:
    return held_blobs(containerd.ctr("images", "ls"), containerd.ctr("content", "ls"))


def image_target(containerd, name: str) -> str:
    return containerd.ctr("images", "ls", f"name=={name}").splitlines()[1].split()[2]


def test_a_node_with_the_earlier_image_gets_only_the_new_layer(built, next_archive, containerd, tmp_path) -> None:
    containerd.ctr("images", "import", str(built.archive))
    first = read_archive(built.archive)
    assert {first.image_id, *(layer.digest for layer in first.layers)} <= held(containerd)

    delta = tmp_path / "delta.tar"
    carried = write_oci_archive(next_archive, NEXT, held(containerd), delta)
    assert carried == [next_archive.layers[-1]]
    assert delta.stat().st_size < 64 * 1024 < built.archive.stat().st_size

    containerd.ctr("images", "import", str(delta))
    out = containerd.ctr("run", "--rm", NEXT, "delta-check", "cat", "/kubelab-probe.txt")
    assert out.encode() == PROBE
    assert next_archive.image_id in containerd.ctr("content", "get", image_target(containerd, NEXT))

    # The same manifest as containerd writes when it imports the whole docker-archive itself.
    target = image_target(containerd, NEXT)
    containerd.ctr("images", "rm", NEXT)
    containerd.ctr("images", "import", str(next_archive.path))
    assert image_target(containerd, NEXT) == target


def test_containerd_really_needs_the_layers_left_out(next_archive, containerd, tmp_path) -> None:
    """A node without the earlier image cannot take the short archive: the layers were really left out."""
    delta = tmp_path / "delta.tar"
    write_oci_archive(next_archive, NEXT, {layer.digest for layer in next_archive.layers[:-1]}, delta)
    with pytest.raises(AssertionError, match="not found"):
        containerd.ctr("images", "import", str(delta))
