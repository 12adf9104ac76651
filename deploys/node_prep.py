"""Node prep, on every node: container runtime, kernel and swap settings, Kubernetes packages."""

from __future__ import annotations

from io import StringIO

from pyinfra import host
from pyinfra.api.deploy import deploy
from pyinfra.operations import files, server, systemd

from deploys import files as node_files
from deploys.lab_host import node_of
from deploys.operations import (
    containerd_configured,
    containerd_meets_floor,
    debs_held,
    debs_installed,
    fstab_without_swap,
    kernel_module,
    swap_off,
)
from labdef.lab import Lab


@deploy("Node prep")
def prepare_node(lab: Lab) -> None:
    node = node_of(lab, host)

    debs_installed(
        name="Install prerequisites and containerd",
        packages=[*node_files.PREREQUISITES, node_files.containerd_package_spec(lab)],
    )
    containerd_meets_floor(name=f"containerd meets Kubernetes {lab.kubernetes.minor}",
                           kubernetes_minor=lab.kubernetes.minor_number,
                           allow_below_floor=lab.containerd.allow_below_floor)

    files.put(name="Kernel modules at boot", src=StringIO(node_files.modules_load()),
              dest=node_files.MODULES_FILE, mode="644")
    for module in node_files.KERNEL_MODULES:
        kernel_module(name=f"Kernel module {module}", module=module)

    files.put(name="Bridge and forwarding sysctls at boot", src=StringIO(node_files.sysctl_conf()),
              dest=node_files.SYSCTL_FILE, mode="644")
    for key, value in node_files.SYSCTLS.items():
        server.sysctl(name=f"sysctl {key}", key=key, value=value)

    swap_off(name="Swap off now")
    fstab_without_swap(name="Swap off after reboot")

    containerd_configured(name="containerd config: SystemdCgroup, CRI, sandbox image",
                          pause_image=node_files.sandbox_image(lab))
    files.put(name="crictl endpoint", src=StringIO(node_files.crictl_config()), dest=node_files.CRICTL_CONFIG,
              mode="644")
    systemd.service(name="containerd running and enabled", service="containerd",
                    running=True, enabled=True)

    files.directory(name="apt keyring directory", path="/etc/apt/keyrings", mode="755")
    files.download(name=f"Kubernetes {lab.kubernetes.minor} repository key",
                   src=lab.kubernetes.key_url, dest=node_files.KEYRING, mode="644")
    files.put(name=f"Kubernetes {lab.kubernetes.minor} repository", src=StringIO(node_files.apt_source(lab)),
              dest=node_files.APT_SOURCE, mode="644")
    debs_installed(
        name=f"Install kubelet, kubeadm, kubectl {lab.kubernetes.package_version}",
        packages=node_files.kube_package_specs(lab),
        extra_install_args="--allow-change-held-packages",  # a version bump in the lab file is deliberate
    )
    debs_held(name="Hold kubelet, kubeadm, kubectl", packages=list(node_files.KUBE_PACKAGES))

    kubelet_ip = files.put(name="kubelet node IP", src=StringIO(node_files.kubelet_defaults(node)),
                           dest=node_files.KUBELET_DEFAULTS, mode="644")
    # Enabled, not started: the kubelet crash-loops until kubeadm init/join configures and starts it.
    systemd.service(name="kubelet enabled", service="kubelet", running=None, enabled=True)
    systemd.service(name="Restart kubelet for its new node IP", service="kubelet", running=None,
                    restarted=True, _if=kubelet_ip.did_change)
