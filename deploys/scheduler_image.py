"""Side-load the scheduler image into every node's containerd, and build it in the control-plane VM.

`side_load_scheduler_image`: upload what the node lacks of the image, `ctr -n k8s.io images import` it (the
kubelet's runtime only sees the k8s.io namespace), remove the upload, and check the image is visible to the
CRI (`crictl inspecti` where crictl is installed, else containerd's own listing of the k8s.io namespace). A
node that holds none of the image's layers gets the docker-archive as built; a node that holds some (an
earlier build: the base and dependency layers rarely change) gets an OCI archive without them
(deploys/image_archive.py says why containerd accepts that). A node that already holds that exact image
(same reference and config digest) gets no operation at all.

`build_scheduler_image_in_vm`: for hosts with none of docker, podman or buildah, build on the control
plane with buildah (installed there from the distribution) from a context prepared on the host (the
wheels are downloaded on the host, so the build needs no network) and fetch the archive back.

The host side (deploy-scheduler) passes the values below and reads `report` and `sent`.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from pyinfra import host
from pyinfra.api import FactBase, OperationError, deploy
from pyinfra.operations import apt, files, python, server

from deploys.facts import ContainerKind
from deploys.image_archive import (
    Blob,
    ImageArchive,
    carried_layers,
    held_blobs,
    normalized_name,
    write_oci_archive,
)
from deploys.lab_host import node_label, sudo

UPLOAD_DIR = "/var/lib/kubelab/images"
BUILD_DIR = "/var/lib/kubelab/build"


def _config_digest_command(ref: str) -> str:
    """Shell: print the config digest (image ID) of REF in containerd's k8s.io namespace, or nothing."""
    name = shlex.quote(f"name=={ref}")
    return (f"d=$(ctr -n k8s.io images ls {name} 2>/dev/null | awk 'NR==2 {{print $3}}'); "
            "if [ -n \"$d\" ]; then ctr -n k8s.io content get \"$d\" "
            "| grep -o '\"config\":{[^}]*}' | grep -o 'sha256:[0-9a-f]*'; fi; true")


class ContainerdImageId(FactBase[str | None]):
    """The image ID (config digest) containerd's k8s.io namespace holds under `ref`, or None."""

    def requires_command(self, ref: str) -> str:
        return "ctr"

    def command(self, ref: str) -> str:
        return _config_digest_command(ref)

    def process(self, output: list[str]) -> str | None:
        lines = [line.strip() for line in output if line.strip()]
        return lines[-1] if lines else None


def _runtime_image_id(ref: str) -> tuple[str, str]:
    """(which view answered, image ID or "") as the kubelet's runtime reports it on the current host."""
    ok, out = host.run_shell_command(
        f"command -v crictl >/dev/null && crictl inspecti -o json {shlex.quote(ref)}", _sudo=sudo(host))
    if ok and out.stdout.strip():
        try:
            return "crictl", json.loads(out.stdout)["status"]["id"]
        except (ValueError, KeyError):
            pass
    ok, out = host.run_shell_command(_config_digest_command(ref), _sudo=sudo(host))
    return "ctr -n k8s.io", (ContainerdImageId().process(out.stdout.splitlines()) if ok else None) or ""


def _verify(ref: str, image_id: str, report: dict[str, str]) -> None:
    view, seen = _runtime_image_id(ref)
    if seen != image_id:
        raise OperationError(f"{node_label(host)}: after the import, {view} shows {seen or 'no image'} for {ref}, "
                             f"expected {image_id}; check containerd's log on the node (journalctl -u containerd)")
    report.setdefault(node_label(host), "imported")


class ContainerdHeldBlobs(FactBase[set[str]]):
    """The blobs containerd's k8s.io namespace holds for its images (image_archive.held_blobs); empty when
    containerd does not answer (the whole archive is sent then, and the import says what is wrong)."""

    @staticmethod
    def default() -> set[str]:
        return set()  # no ctr on the node: the import step then says so

    def requires_command(self) -> str:
        return "ctr"

    def command(self) -> str:
        return "ctr -n k8s.io images ls 2>/dev/null; echo '---'; ctr -n k8s.io content ls 2>/dev/null; true"

    def process(self, output: list[str]) -> set[str]:
        text = "\n".join(output)
        images, _, content = text.partition("\n---\n") if "\n---\n" in text else ("", "", "")
        return held_blobs(images, content)


def _upload_for(image: ImageArchive, ref: str, held: set[str], work_dir: Path) -> tuple[Path, list[Blob]]:
    """The file to send a node holding `held`, and the layers it carries: the docker-archive itself when
    the node holds none of the layers (or a layer has no Docker schema 2 type), else an OCI archive without
    the held ones, written into this run's `work_dir` (one per distinct set: nodes in the same state share
    it; the host side removes the folder after the run)."""
    leave_out = {layer.digest for layer in image.layers} & held
    if not leave_out or not image.splittable:
        return image.path, carried_layers(image, set())
    key = hashlib.sha256(" ".join([image.image_id, *sorted(leave_out)]).encode()).hexdigest()[:12]
    dest = work_dir / f"{image.path.stem}.without-{key}.oci.tar"
    if not dest.exists():
        write_oci_archive(image, ref, leave_out, dest)
    return dest, carried_layers(image, leave_out)


def _import_command(remote: str, name: str) -> str:
    """Import and remove the upload whatever happens. containerd 1.6/1.7 record the image before unpacking
    it, so a failed unpack would leave a record the next run takes for the image being present: remove it."""
    upload, image = shlex.quote(remote), shlex.quote(name)
    return (f"ctr -n k8s.io images import {upload}; rc=$?; rm -f {upload}; "
            f"if [ $rc -ne 0 ]; then ctr -n k8s.io images rm {image} >/dev/null 2>&1; fi; exit $rc")


@deploy("Side-load the scheduler image")
def side_load_scheduler_image(image: ImageArchive, ref: str, work_dir: str, report: dict[str, str],
                              sent: dict[str, list[Blob]]) -> None:
    name = normalized_name(ref)
    if host.get_fact(ContainerdImageId, ref=name) == image.image_id:
        report[node_label(host)] = "present"
        return
    upload, sent[node_label(host)] = _upload_for(image, ref, host.get_fact(ContainerdHeldBlobs), Path(work_dir))
    remote = f"{UPLOAD_DIR}/{upload.name}"
    files.directory(name="Image upload folder", path=UPLOAD_DIR, mode="0700")
    files.put(name="Upload the scheduler image (the layers the node lacks)", src=str(upload), dest=remote,
              mode="0600")
    server.shell(name="Import the image into containerd (namespace k8s.io), remove the upload",
                 commands=[_import_command(remote, name)])
    python.call(name="Check the kubelet's runtime sees the image", function=_verify,
                ref=name, image_id=image.image_id, report=report)


def build_script(context: str, archive: str, ref: str, base_ref: str, python_version: str, platform: str,
                 in_container: bool) -> str:
    """One shell script: buildah bud into a single-platform docker-archive at `archive`."""
    q = shlex.quote
    pull = "never" if base_ref.startswith("localhost/") else "true"
    # An lxc machine (provider lxc) cannot give runc its cgroups: run the build steps chrooted there
    # (chroot isolation only shares the host network; the steps need none, the wheels are in the context).
    isolation = "--isolation chroot" if in_container else "--network=none"
    return " && ".join([
        # overlay inside a container is often refused: fall back to vfs, slower but always there
        "{ buildah info >/dev/null 2>&1 || export STORAGE_DRIVER=vfs; }",
        f"rm -f {q(archive)}",
        (f"buildah bud --layers {isolation} --pull={pull} --platform {q(platform)} "
        f"--build-arg BASE_IMAGE={q(base_ref)} --build-arg PYTHON_VERSION={q(python_version)} "
        f"-f {q(context)}/Containerfile -t {q(ref)} {q(context)}"),
        f"buildah push --quiet {q(ref)} docker-archive:{q(archive)}:{q(ref)}",
    ])


@deploy("Build the scheduler image in the VM")
def build_scheduler_image_in_vm(context_tarball: str, ref: str, base_ref: str, python_version: str,
                                platform: str, archive_on_host: str) -> None:
    data = host.data.get("node")
    if not isinstance(data, dict) or data.get("role") != "control-plane":
        return  # one build, on the control plane; the side-load then reaches every node
    context = f"{BUILD_DIR}/context"
    remote_archive = f"{BUILD_DIR}/image.tar"
    apt.packages(name="buildah (builds the image here: the host has no build tool)",
                 packages=["buildah"], no_recommends=True, update=True, cache_time=3600)
    files.directory(name="Build folder", path=BUILD_DIR, mode="0700")
    files.put(name="Upload the build context", src=context_tarball, dest=f"{BUILD_DIR}/context.tar")
    server.shell(name="Unpack the build context", commands=[
        f"rm -rf {context} && mkdir -p {context} && tar -xf {BUILD_DIR}/context.tar -C {context}"])
    in_container = host.get_fact(ContainerKind) is not None
    server.shell(name="Build with buildah and save a single-platform docker-archive", commands=[
        build_script(context, remote_archive, ref, base_ref, python_version, platform, in_container)])
    files.get(name="Fetch the archive to the host", src=remote_archive, dest=archive_on_host)
    files.file(name="Remove the remote archive", path=remote_archive, present=False)
