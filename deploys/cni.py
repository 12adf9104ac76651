"""Calico through the Tigera operator, at the pinned release: its CRDs (operator-crds.yaml; since v3.30 the
operator manifest holds none), the operator, then our rendered Installation (pool = pod CIDR, addresses
from the host-only network) once the CRDs it needs are established."""

from __future__ import annotations

from pyinfra.api.deploy import deploy
from pyinfra.operations import files

from deploys import files as node_files
from deploys.operations import manifest_applied
from labdef.lab import Lab


@deploy("Calico")
def calico(lab: Lab) -> None:
    version = lab.cni.calico_version
    files.directory(name=f"Calico {version} folder", path=node_files.calico_release_dir(lab), mode="700")
    for name in node_files.CALICO_RELEASE_MANIFESTS:
        files.download(name=f"Calico {version} {name}", src=lab.cni.manifest_url(name),
                       dest=node_files.calico_manifest(lab, name), mode="600")
    for name in node_files.CALICO_RELEASE_MANIFESTS:
        # Server-side: the CRDs are too large for client-side apply's last-applied annotation.
        manifest_applied(name=f"Apply Calico {version} {name}", path=node_files.calico_manifest(lab, name),
                         server_side=True)
    manifest_applied(name="Apply the Calico Installation", path=node_files.CALICO_INSTALLATION,
                     content=node_files.calico_installation(lab), needs_crds=node_files.CALICO_INSTALLATION_CRDS)
