"""The DRA example driver (lab.yaml `dra.example_driver`): kubernetes-sigs/dra-example-driver's kubelet plugin
on every worker and its DeviceClass, from our own template (templates/dra/example-driver.yaml.j2), applied
on the control plane after the CNI.

What the driver publishes, as its source says (kubernetes-sigs/dra-example-driver, read on 2026-11-28:
pkg/consts DriverName, internal/profiles/gpu/gpu.go EnumerateAllPossibleDevices, cmd/dra-example-kubeletplugin
main.go flags, deployments/helm chart's clusterrole.yaml and kubeletplugin.yaml): one ResourceSlice per node,
pool = the node's name, devices gpu-0 .. gpu-(N-1) with attributes index (int), uuid (string), model
("LATEST-GPU-MODEL") and driverVersion (version 1.0.0), capacity memory 80Gi; N from NUM_DEVICES.
"""

from __future__ import annotations

from pyinfra.api.deploy import deploy

from deploys import files as node_files
from deploys.operations import manifest_applied
from labdef.lab import Lab

DRIVER = "gpu.example.com"
DEVICE_CLASS = "gpu.example.com"  # the chart's DeviceClass name, the same as the driver's
DEVICE_MODEL = "LATEST-GPU-MODEL"


@deploy("DRA example driver")
def dra_example_driver(lab: Lab) -> None:
    manifest_applied(name="Apply the DRA example driver", path=node_files.DRA_EXAMPLE_DRIVER,
                     content=node_files.dra_example_driver(lab))
