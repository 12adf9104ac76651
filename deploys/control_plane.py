"""Control plane: kubeadm configuration rendered from the lab definition, `kubeadm init` once, and the
admin kubeconfig for the login user."""

from __future__ import annotations

from io import StringIO

from pyinfra import host
from pyinfra.api.deploy import deploy
from pyinfra.operations import files

from deploys import files as node_files
from deploys.lab_host import login_user
from deploys.operations import kubeadm_initialised, user_kubeconfig
from labdef.lab import Lab


@deploy("Control plane")
def control_plane(lab: Lab) -> None:
    files.put(name=f"kubeadm config ({node_files.kubeadm_api_version(lab)})",
              src=StringIO(node_files.kubeadm_init_config(lab)),
              dest=node_files.KUBEADM_INIT_CONFIG, mode="600")
    kubeadm_initialised(name="kubeadm init", config_path=node_files.KUBEADM_INIT_CONFIG)
    user = login_user(host)
    user_kubeconfig(name=f"kubeconfig for {user}", user=user)
