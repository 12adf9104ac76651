"""The whole cluster in one deploy: node prep everywhere, then control plane, Calico, the DRA example driver
(when the lab asks for it) and joins.

pyinfra runs each operation on every host before the next one. Through its Python API it matches
operations across hosts by their position in each host's list, so every host calls the same operations
in the same order and role-specific ones are switched off with `_if` (a host-only `if` would shift the
positions and let a worker's join run beside the control plane's init).
"""

from __future__ import annotations

from pyinfra import host
from pyinfra.api.deploy import deploy

from deploys.cni import calico
from deploys.control_plane import control_plane
from deploys.dra import dra_example_driver
from deploys.join import JoinHandoff, join_workers
from deploys.lab_host import node_of
from deploys.node_prep import prepare_node
from labdef.lab import Lab


@deploy("Kubernetes cluster")
def kubernetes_cluster(lab: Lab, handoff: JoinHandoff, pending_joins: list[str],
                       prepare_only: bool = False) -> None:
    is_control_plane = node_of(lab, host).role == "control-plane"
    prepare_node(lab)
    if prepare_only:  # the same on every host, so positions stay aligned; see the module docstring
        return
    control_plane(lab, _if=lambda: is_control_plane)
    calico(lab, _if=lambda: is_control_plane)
    dra_example_driver(lab, _if=lambda: is_control_plane and lab.dra.example_driver)
    join_workers(lab, handoff, pending_joins)
