"""The whole cluster in one deploy: node prep everywhere, then control plane, Calico and joins.

pyinfra orders operations by where they are called, and runs each one on every host before the next, so
the control plane is initialised and the token minted before any worker joins.
"""

from __future__ import annotations

from pyinfra import host
from pyinfra.api.deploy import deploy

from deploys.cni import calico
from deploys.control_plane import control_plane
from deploys.join import JoinHandoff, join_workers
from deploys.lab_host import node_of
from deploys.node_prep import prepare_node
from labkit.definition import Lab


@deploy("Kubernetes cluster")
def kubernetes_cluster(lab: Lab, handoff: JoinHandoff, pending_joins: list[str]) -> None:
    prepare_node(lab)
    if node_of(lab, host).role == "control-plane":
        control_plane(lab)
        calico(lab)
    join_workers(lab, handoff, pending_joins)
