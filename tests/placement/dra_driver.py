"""What kubernetes-sigs/dra-example-driver publishes in a DRA lab, as deploys/files.py records it from the
driver's source: per worker one ResourceSlice (pool = the node's name, devices gpu-0 .. gpu-(N-1) with
attributes index, uuid, model and driverVersion, capacity memory 80Gi), and the DeviceClass as our own template
renders it (templates/dra/example-driver.yaml.j2). It stands in for the driver's kubelet plugin, which writes
the slices in a real lab; it models no device preparation, no CDI and no slice updates."""

from __future__ import annotations

from typing import Any

import yaml

from deploys import files as node_files
from deploys.files import DEVICE_MODEL, DRIVER
from kubeapi_testserver import KubeApiServer
from labdef.lab import Lab


def example_slice(node: str, devices: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}",
                                  "attributes": {"index": {"int": i}, "uuid": {"string": f"gpu-{node}-{i}"},
                                                 "model": {"string": DEVICE_MODEL},
                                                 "driverVersion": {"version": "1.0.0"}},
                                  "capacity": {"memory": {"value": "80Gi"}}}
                                 for i in range(devices)]}}


def device_class(lab: Lab) -> dict[str, Any]:
    """The DeviceClass the lab applies, from the rendered driver manifest."""
    (found,) = [d for d in yaml.safe_load_all(node_files.dra_example_driver(lab)) if d and d["kind"] == "DeviceClass"]
    return found


def publish(server: KubeApiServer, lab: Lab, workers: list[str], devices: int) -> None:
    """The DeviceClass and each worker's slice, as the driver's install and kubelet plugins leave them."""
    server.create_object("deviceclasses", device_class(lab))
    for worker in workers:
        server.create_object("resourceslices", example_slice(worker, devices))
