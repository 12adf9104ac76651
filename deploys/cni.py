"""Calico through the Tigera operator: the operator manifest at the pinned version, then our rendered
Installation (pool = pod CIDR, addresses from the host-only network)."""

from __future__ import annotations

from pyinfra.api.deploy import deploy
from pyinfra.operations import files

from deploys import files as node_files
from deploys.operations import manifest_applied
from labdef.lab import Lab

INSTALLATION_CRD = "crd/installations.operator.tigera.io"


@deploy("Calico")
def calico(lab: Lab) -> None:
    files.download(name=f"Tigera operator {lab.cni.calico_version} manifest", src=lab.cni.operator_url,
                   dest=node_files.TIGERA_OPERATOR, mode="600")
    # The operator's CRDs are too large for client-side apply's last-applied annotation.
    manifest_applied(name="Apply the Tigera operator", path=node_files.TIGERA_OPERATOR, server_side=True)
    manifest_applied(name="Apply the Calico Installation", path=node_files.CALICO_INSTALLATION,
                     content=node_files.calico_installation(lab),
                     wait_for=f"condition=established {INSTALLATION_CRD}")
