"""What goes onto the nodes, parsed back: kubeadm configuration, Calico Installation, node files."""

from __future__ import annotations

import ipaddress

import pytest
import yaml

from deploys import files as f
from labdef.render import TemplateError, render
from tests.deploys.labs import make_lab


def docs(text: str) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(text)}


@pytest.mark.parametrize("workers", [1, 3])
def test_kubeadm_init_config_matches_the_lab(workers):
    lab = make_lab(workers=workers)
    config = docs(f.kubeadm_init_config(lab))
    init, cluster, kubelet = config["InitConfiguration"], config["ClusterConfiguration"], config["KubeletConfiguration"]
    cp = lab.control_plane
    assert init["apiVersion"] == cluster["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert init["localAPIEndpoint"]["advertiseAddress"] == str(cp.ip)  # host-only, not VirtualBox NAT
    assert init["localAPIEndpoint"]["bindPort"] == 6443
    assert init["nodeRegistration"]["name"] == cp.name
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": str(cp.ip)}]
    assert cluster["controlPlaneEndpoint"] == f"{cp.ip}:6443"
    assert cluster["kubernetesVersion"] == f"v{lab.kubernetes.version}"
    assert cluster["networking"] == {"podSubnet": str(lab.network.pod_cidr),
                                     "serviceSubnet": str(lab.network.service_cidr)}
    assert cluster["clusterName"] == lab.name
    assert kubelet["cgroupDriver"] == "systemd"


def test_kubeadm_v1beta3_below_1_31_takes_maps():
    lab = make_lab(kubernetes={"version": "1.30.6"})
    config = docs(f.kubeadm_init_config(lab))
    assert config["InitConfiguration"]["apiVersion"] == "kubeadm.k8s.io/v1beta3"
    assert config["InitConfiguration"]["nodeRegistration"]["kubeletExtraArgs"] == {"node-ip": str(lab.control_plane.ip)}
    join = docs(f.kubeadm_join_config(lab, lab.workers[0], "abcdef.0123456789abcdef", "sha256:" + "0" * 64))
    assert join["JoinConfiguration"]["apiVersion"] == "kubeadm.k8s.io/v1beta3"
    assert join["JoinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"] == {"node-ip": str(lab.workers[0].ip)}


@pytest.mark.parametrize("version,api", [("1.31.0", "v1beta4"), ("1.30.9", "v1beta3"), ("1.28.1", "v1beta3")])
def test_api_version_follows_the_kubernetes_minor(version, api):
    assert f.kubeadm_api_version(make_lab(kubernetes={"version": version})) == api


def test_each_worker_joins_with_its_own_name_and_host_only_ip():
    lab = make_lab(workers=3)
    seen = set()
    for worker in lab.workers:
        join = docs(f.kubeadm_join_config(lab, worker, "abcdef.0123456789abcdef", "sha256:" + "a" * 64))["JoinConfiguration"]
        registration = join["nodeRegistration"]
        assert registration["name"] == worker.name
        assert registration["kubeletExtraArgs"] == [{"name": "node-ip", "value": str(worker.ip)}]
        assert join["discovery"]["bootstrapToken"] == {
            "apiServerEndpoint": f"{lab.control_plane.ip}:6443", "token": "abcdef.0123456789abcdef",
            "caCertHashes": ["sha256:" + "a" * 64]}
        seen.add(str(worker.ip))
    assert len(seen) == 3


@pytest.mark.parametrize("workers", [1, 3])
def test_calico_pool_is_the_pod_subnet_and_addresses_come_from_the_host_only_network(workers):
    lab = make_lab(workers=workers)
    installation = docs(f.calico_installation(lab))["Installation"]
    network = installation["spec"]["calicoNetwork"]
    (pool,) = network["ipPools"]
    kubeadm_pod_subnet = docs(f.kubeadm_init_config(lab))["ClusterConfiguration"]["networking"]["podSubnet"]
    assert pool["cidr"] == kubeadm_pod_subnet == str(lab.network.pod_cidr)
    pool_net = ipaddress.ip_network(pool["cidr"])
    assert not pool_net.overlaps(lab.network.host_only_cidr)  # Calico's default 192.168.0.0/16 would
    assert not pool_net.overlaps(lab.network.service_cidr)
    (cidr,) = network["nodeAddressAutodetectionV4"]["cidrs"]
    assert all(node.ip in ipaddress.ip_network(cidr) for node in lab.nodes)
    assert pool["natOutgoing"] == "Enabled"


@pytest.mark.parametrize("method,expected", [
    ("can-reach", {"canReach": "192.168.56.10"}),
    ("kubernetes-internal-ip", {"kubernetes": "NodeInternalIP"}),
])
def test_other_autodetection_methods_stay_on_the_host_only_network(method, expected):
    lab = make_lab(cni={"ip_autodetection": method})
    network = docs(f.calico_installation(lab))["Installation"]["spec"]["calicoNetwork"]
    assert network["nodeAddressAutodetectionV4"] == expected


def test_apt_source_is_signed_by_the_keyring_and_follows_the_minor():
    lab = make_lab(kubernetes={"version": "1.35.2"})
    lines = [line for line in f.apt_source(lab).splitlines() if not line.startswith("#")]
    assert lines == [f"deb [signed-by={f.KEYRING}] https://pkgs.k8s.io/core:/stable:/v1.35/deb/ /"]
    assert lab.kubernetes.key_url == "https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key"


def test_local_mirror_package_source():
    lab = make_lab(kubernetes={"package_source": "file:///srv/kube-debs/v{minor}/"})
    assert "] file:///srv/kube-debs/v1.36/ /" in f.apt_source(lab)
    assert lab.kubernetes.key_url == "file:///srv/kube-debs/v1.36/Release.key"


def test_node_files():
    lab = make_lab(workers=3)
    worker = lab.workers[2]
    assert f"KUBELET_EXTRA_ARGS=--node-ip={worker.ip}\n" in f.kubelet_defaults(worker)
    sysctls = dict(line.split(" = ") for line in f.sysctl_conf().splitlines() if line and not line.startswith("#"))
    assert sysctls == {"net.bridge.bridge-nf-call-iptables": "1", "net.bridge.bridge-nf-call-ip6tables": "1",
                       "net.ipv4.ip_forward": "1"}
    modules = [line for line in f.modules_load().splitlines() if line and not line.startswith("#")]
    assert modules == ["overlay", "br_netfilter"]
    assert f.kube_package_specs(lab) == ["kubelet=1.36.4-1.1", "kubeadm=1.36.4-1.1", "kubectl=1.36.4-1.1"]


def test_render_refuses_missing_values_and_templates():
    with pytest.raises(TemplateError, match="kubelet-defaults.j2: 'node_ip' is undefined"):
        render("node/kubelet-defaults.j2")
    with pytest.raises(TemplateError, match="no such template"):
        render("node/nothing.j2")
