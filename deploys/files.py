"""What the deploys write on the nodes: paths and the rendered content, all derived from the lab definition.

Pure functions of (lab, node): the fast tests parse exactly what goes onto the machines.
"""

from __future__ import annotations

from labdef import versions
from labdef.lab import Lab, Node
from labdef.render import render

KEYRING = "/etc/apt/keyrings/kubernetes-apt-keyring.asc"  # .asc: apt reads armoured keys, no gpg needed
APT_SOURCE = "/etc/apt/sources.list.d/kubernetes.list"
MODULES_FILE = "/etc/modules-load.d/kubernetes.conf"
SYSCTL_FILE = "/etc/sysctl.d/99-kubernetes.conf"
KUBELET_DEFAULTS = "/etc/default/kubelet"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_SOCKET = "unix:///run/containerd/containerd.sock"
CRICTL_CONFIG = "/etc/crictl.yaml"
KUBELAB_DIR = "/etc/kubelab"  # our rendered inputs; kubeadm wants /etc/kubernetes to itself
KUBEADM_INIT_CONFIG = f"{KUBELAB_DIR}/kubeadm-init.yaml"
KUBEADM_JOIN_CONFIG = f"{KUBELAB_DIR}/kubeadm-join.yaml"
# `kubeadm init` started / exited 0 on this node: admin.conf alone is no proof (kubeadm writes it early).
KUBEADM_INIT_STARTED = f"{KUBELAB_DIR}/kubeadm-init.started"
KUBEADM_INIT_FINISHED = f"{KUBELAB_DIR}/kubeadm-init.finished"
CALICO_DIR = f"{KUBELAB_DIR}/calico"  # one folder per release: a new calico_version downloads anew
# The release's manifests, in apply order: since v3.30 the operator manifest holds no CRD.
CALICO_RELEASE_MANIFESTS = ("operator-crds.yaml", "tigera-operator.yaml")
CALICO_INSTALLATION = f"{KUBELAB_DIR}/calico-installation.yaml"
# The CRDs of the kinds templates/calico/installation.yaml.j2 renders, which must be established first.
CALICO_INSTALLATION_CRDS = ("installations.operator.tigera.io", "apiservers.operator.tigera.io")
DRA_EXAMPLE_DRIVER = f"{KUBELAB_DIR}/dra-example-driver.yaml"
ADMIN_CONF = "/etc/kubernetes/admin.conf"  # written early by kubeadm init (kubeconfig phase)
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"  # written by init and join: the node has joined
API_PORT = 6443

KERNEL_MODULES = ("overlay", "br_netfilter")
SYSCTLS = {
    "net.bridge.bridge-nf-call-iptables": 1,
    "net.bridge.bridge-nf-call-ip6tables": 1,
    "net.ipv4.ip_forward": 1,
}
KUBE_PACKAGES = ("kubelet", "kubeadm", "kubectl")
PREREQUISITES = ("ca-certificates", "curl")


def kubeadm_api_version(lab: Lab) -> str:
    return versions.kubeadm_api(lab.kubernetes.minor_number)


def api_endpoint(lab: Lab) -> str:
    return f"{lab.control_plane.ip}:{API_PORT}"


def kubeadm_init_config(lab: Lab) -> str:
    node = lab.control_plane
    return render(
        f"kubeadm/{kubeadm_api_version(lab)}/init.yaml.j2",
        cluster_name=lab.name,
        kubernetes_version=lab.kubernetes.version,
        node_name=node.name,
        node_ip=str(node.ip),
        api_port=API_PORT,
        api_endpoint=api_endpoint(lab),
        pod_cidr=str(lab.network.pod_cidr),
        service_cidr=str(lab.network.service_cidr),
        **control_plane_flags(lab),
    )


def control_plane_flags(lab: Lab) -> dict[str, dict]:
    """kubernetes.feature_gates and runtime_config as the kubeadm templates place them: extraArgs of the API
    server (feature-gates, runtime-config), of the controller manager and scheduler (feature-gates), and the
    KubeletConfiguration's featureGates (kubeadm shares it with every node that joins)."""
    gates, runtime = lab.kubernetes.feature_gates_flag, lab.kubernetes.runtime_config_flag
    api_server = {name: value for name, value in (("feature-gates", gates), ("runtime-config", runtime)) if value}
    return {"api_server_args": api_server, "component_args": {"feature-gates": gates} if gates else {},
            "kubelet_feature_gates": lab.kubernetes.feature_gate_values}


def kubeadm_join_config(lab: Lab, node: Node, token: str, ca_cert_hash: str) -> str:
    return render(
        f"kubeadm/{kubeadm_api_version(lab)}/join.yaml.j2",
        api_endpoint=api_endpoint(lab),
        token=token,
        ca_cert_hash=ca_cert_hash,
        node_name=node.name,
        node_ip=str(node.ip),
    )


def calico_release_dir(lab: Lab) -> str:
    return f"{CALICO_DIR}/{lab.cni.calico_version}"


def calico_manifest(lab: Lab, name: str) -> str:
    """Where the node keeps one of the pinned release's manifests (see CALICO_RELEASE_MANIFESTS)."""
    return f"{calico_release_dir(lab)}/{name}"


def applied_record(manifest: str) -> str:
    """Holds the sha256 of `manifest` as last applied, written only after `kubectl apply` succeeded."""
    return f"{manifest}.applied-sha256"


def node_address_autodetection(lab: Lab) -> dict:
    """Calico's nodeAddressAutodetectionV4: always tied to the host-only network, never the NAT one."""
    method = lab.cni.ip_autodetection
    if method == "cidr":
        return {"cidrs": [str(lab.network.host_only_cidr)]}
    if method == "can-reach":
        return {"canReach": str(lab.control_plane.ip)}
    return {"kubernetes": "NodeInternalIP"}  # the kubelet's --node-ip, itself the host-only address


def calico_installation(lab: Lab) -> str:
    return render(
        "calico/installation.yaml.j2",
        calico_version=lab.cni.calico_version,
        pod_cidr=str(lab.network.pod_cidr),
        node_address_autodetection=node_address_autodetection(lab),
    )


def apt_source(lab: Lab) -> str:
    return render(
        "node/kubernetes.list.j2",
        minor=lab.kubernetes.minor,
        keyring=KEYRING,
        package_url=lab.kubernetes.package_url,
    )


def modules_load() -> str:
    return render("node/modules-load.conf.j2", modules=KERNEL_MODULES)


def sysctl_conf() -> str:
    return render("node/sysctl.conf.j2", sysctls=SYSCTLS)


def crictl_config() -> str:
    return render("node/crictl.yaml.j2", endpoint=CONTAINERD_SOCKET)


def sandbox_image(lab: Lab) -> str | None:
    """The pause image the pinned kubeadm expects; None for a minor labdef.versions does not know."""
    return versions.pause_image(lab.kubernetes.minor_number)


def kubelet_defaults(node: Node) -> str:
    return render("node/kubelet-defaults.j2", node_ip=str(node.ip))


def kube_package_specs(lab: Lab) -> list[str]:
    return [f"{name}={lab.kubernetes.package_version}" for name in KUBE_PACKAGES]


def containerd_package_spec(lab: Lab) -> str:
    pin = lab.containerd.version
    return f"{lab.containerd.package}={pin}" if pin else lab.containerd.package


# What kubernetes-sigs/dra-example-driver publishes, as its source says (read on 2026-11-28: pkg/consts
# DriverName, internal/profiles/gpu/gpu.go EnumerateAllPossibleDevices, cmd/dra-example-kubeletplugin main.go
# flags, deployments/helm chart's clusterrole.yaml and kubeletplugin.yaml): one ResourceSlice per node, pool =
# the node's name, devices gpu-0 .. gpu-(N-1) with attributes index (int), uuid (string), model
# ("LATEST-GPU-MODEL") and driverVersion (version 1.0.0), capacity memory 80Gi; N from NUM_DEVICES.
DRIVER = "gpu.example.com"
DEVICE_CLASS = "gpu.example.com"  # the chart's DeviceClass name, the same as the driver's
DEVICE_MODEL = "LATEST-GPU-MODEL"


def dra_example_driver(lab: Lab) -> str:
    """The DRA example driver's objects (lab.yaml `dra`): namespace, RBAC, the kubelet plugin's DaemonSet on
    every worker and the DeviceClass."""
    labels = {"app.kubernetes.io/name": "dra-example-driver", "app.kubernetes.io/managed-by": "kubelab"}
    return render("dra/example-driver.yaml.j2", name="dra-example-driver", namespace=lab.dra.namespace,
                  labels=labels, selector={"app.kubernetes.io/name": "dra-example-driver"},
                  image=lab.dra.image, devices_per_node=lab.dra.devices_per_node, driver=DRIVER,
                  device_class=DEVICE_CLASS, registrar_dir="/var/lib/kubelet/plugins_registry",
                  plugins_dir="/var/lib/kubelet/plugins")
