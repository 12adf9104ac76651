"""`./lab kubectl ARGS`: kubectl against the lab, as `minikube kubectl` does.

The host's kubectl with the lab's exported kubeconfig and its context when kubectl is on PATH; otherwise the
control plane's own kubectl (kubeadm installs one there) over `./lab ssh`, reading kubeadm's admin.conf.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from deploys.files import ADMIN_CONF
from labdef.lab import Lab
from labkit.kube import KubeconfigError
from labkit.paths import LabPaths
from labkit.ssh import lab_ssh_argv


def host_kubectl_argv(kubectl: str, kubeconfig: Path, context: str, args: Sequence[str]) -> list[str]:
    if not kubeconfig.exists():
        raise KubeconfigError(f"{kubeconfig}: no such kubeconfig; bring the lab up with `./lab up` (it exports "
                              "one there)")
    return [kubectl, "--kubeconfig", str(kubeconfig), "--context", context, *args]


def kubectl_argv(lab: Lab, lab_file: Path, args: Sequence[str]) -> list[str]:
    """What to run for `./lab kubectl ARGS`."""
    kubectl = shutil.which("kubectl")
    if kubectl:
        return host_kubectl_argv(kubectl, LabPaths.for_lab(lab.name).kubeconfig, lab.name, args)
    # admin.conf is root's alone (0600): the VM user reads it through sudo, as the deploys do.
    remote = ["sudo", "kubectl", "--kubeconfig", ADMIN_CONF, *args]
    return lab_ssh_argv(lab, lab_file, None, [shlex.join(remote)])  # quoted: the remote shell splits it
