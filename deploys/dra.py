"""The DRA example driver (lab.yaml `dra.example_driver`): kubernetes-sigs/dra-example-driver's kubelet plugin
on every worker and its DeviceClass, from our own template (templates/dra/example-driver.yaml.j2), applied
on the control plane after the CNI. What the driver publishes: deploys/files.py beside its manifest.
"""

from __future__ import annotations

from pyinfra.api.deploy import deploy

from deploys import files as node_files
from deploys.operations import manifest_applied
from labdef.lab import Lab


@deploy("DRA example driver")
def dra_example_driver(lab: Lab) -> None:
    manifest_applied(name="Apply the DRA example driver", path=node_files.DRA_EXAMPLE_DRIVER,
                     content=node_files.dra_example_driver(lab))
