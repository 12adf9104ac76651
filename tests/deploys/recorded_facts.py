"""Facts as pyinfra would read them from a fresh Ubuntu VM and from a finished cluster node.

After the install, a fresh Ubuntu 24.04 node has containerd 2.2.1 (the noble-updates pocket); its default
config is containerd 2.2's CRI plugin defaults as containerd's own docs print them
(recorded/containerd-2.2.0-cri-config.toml). recorded/containerd-1.6.20-config-default.toml is the real
output of `containerd config default` from Debian 12's containerd 1.6.20 package (the config version 2
layout). A finished node holds exactly what the deploys write, so its file hashes are computed from the same
rendering functions; a fresh node has the stock files of an Ubuntu cloud image (swap file in fstab, overlay
loaded, br_netfilter not).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from deploys import containerd_config
from deploys import files as f
from deploys.facts import InitState
from labdef.lab import Lab, Node

RECORDED = Path(__file__).parent / "recorded"
CONTAINERD_DEFAULT = (RECORDED / "containerd-1.6.20-config-default.toml").read_text()
CONTAINERD_2_CRI_DEFAULT = (RECORDED / "containerd-2.2.0-cri-config.toml").read_text()
UBUNTU_CONTAINERD = "2.2.1"  # what `containerd --version` says after installing noble-updates' containerd
STOCK_FSTAB = [
    "LABEL=cloudimg-rootfs\t/\t ext4\tdiscard,errors=remount-ro\t0 1",
    "LABEL=UEFI\t/boot/efi\tvfat\tumask=0077\t0 1",
    "/swap.img\tnone\tswap\tsw\t0\t0",
]
EXISTING_DIRS = ["/etc", "/etc/default", "/etc/apt/sources.list.d", "/etc/sysctl.d", "/etc/modules-load.d",
                 "/etc/apt/keyrings"]
ADMIN_CONF_SHA1 = "5f1d7e0c1a3b2c4d6e8f0a1b2c3d4e5f60718293"


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _file(mode: int = 644) -> dict:
    return {"user": "root", "group": "root", "mode": mode, "size": 1, "mtime": None, "atime": None}


def _written_files(lab: Lab, node: Node) -> dict[str, tuple[str, int]]:
    """path -> (content, mode) for every file the deploys upload to this node."""
    written = {
        f.MODULES_FILE: (f.modules_load(), 644),
        f.SYSCTL_FILE: (f.sysctl_conf(), 644),
        f.CONTAINERD_CONFIG: (containerd_config.kubernetes_config(CONTAINERD_2_CRI_DEFAULT, f.sandbox_image(lab)),
                              644),
        f.CRICTL_CONFIG: (f.crictl_config(), 644),
        f.APT_SOURCE: (f.apt_source(lab), 644),
        f.KUBELET_DEFAULTS: (f.kubelet_defaults(node), 644),
    }
    if node.role == "control-plane":
        written[f.KUBEADM_INIT_CONFIG] = (f.kubeadm_init_config(lab), 600)
        written[f.CALICO_INSTALLATION] = (f.calico_installation(lab), 600)
        if lab.dra.example_driver:
            written[f.DRA_EXAMPLE_DRIVER] = (f.dra_example_driver(lab), 600)
    return written


def release_digest(lab: Lab, name: str) -> str:
    """Stands for the sha256 of a downloaded Calico manifest: one value per release and file."""
    return hashlib.sha256(f"{lab.cni.calico_version}/{name}".encode()).hexdigest()


def _calico_manifests(lab: Lab) -> list[str]:
    return [f.calico_manifest(lab, name) for name in f.CALICO_RELEASE_MANIFESTS]


def _per_service(running: bool) -> dict:
    return {(f"{name}.service",): {f"{name}.service": running} for name in ("containerd", "kubelet")}


def fresh_node(lab: Lab, node: Node) -> dict:
    """A new VM from the box, as the control plane sees it when each of its operations runs: later
    operations read what earlier ones produced (containerd's defaults, admin.conf after init)."""
    calico = _calico_manifests(lab)
    paths = [*_written_files(lab, node), f.KEYRING, *calico, f.ADMIN_CONF, f.KUBELET_CONF, "/etc/fstab"]
    dirs = {p: (_file(755) if p in EXISTING_DIRS else None)
            for p in [*paths, *EXISTING_DIRS, f.KUBELAB_DIR, f.calico_release_dir(lab), "/etc/containerd",
                      "/home/vagrant/.kube"]}
    applied = [*calico, f.CALICO_INSTALLATION, *([f.DRA_EXAMPLE_DRIVER] if lab.dra.example_driver else [])]
    return {
        "DebPackages": {"ca-certificates": ["20240203"], "curl": ["8.5.0-2ubuntu10.6"]},
        "HeldPackages": [],
        "KernelModuleState": {"overlay": "loaded", "br_netfilter": "missing"},
        "ContainerKind": None,
        "ActiveSwap": ["/swap.img"],
        "FileContents": {"/etc/fstab": STOCK_FSTAB, **{f.applied_record(p): None for p in applied}},
        "ContainerdDefaultConfig": CONTAINERD_2_CRI_DEFAULT,
        "ContainerdVersion": UBUNTU_CONTAINERD,
        "File": {p: (_file() if p == "/etc/fstab" else None) for p in paths},
        "Directory": dirs,
        "Sha1File": {f.ADMIN_CONF: ADMIN_CONF_SHA1, "/home/vagrant/.kube/config": None,
                     "/etc/fstab": sha1("\n".join(STOCK_FSTAB) + "\n")},
        "Sha256File": {f.calico_manifest(lab, name): release_digest(lab, name) for name in f.CALICO_RELEASE_MANIFESTS},
        "KubeadmInitState": InitState("absent"),
        "Sysctl": {(key,): {key: 0} for key in f.SYSCTLS},
        "SystemdStatus": _per_service(False),
        "SystemdEnabled": _per_service(False),
        "Home": {"vagrant": "/home/vagrant"},
        "KubeObjectsPresent": {p: False for p in applied},
        "TmpDir": "/tmp",
        "Which": {"curl": "/usr/bin/curl", "wget": None},
    }


def finished_node(lab: Lab, node: Node) -> dict:
    """The same node after a complete run: the second run must find nothing to do."""
    written = _written_files(lab, node)
    facts = fresh_node(lab, node)
    installed = {name: [lab.kubernetes.package_version] for name in f.KUBE_PACKAGES}
    facts.update({
        "DebPackages": {**facts["DebPackages"], "containerd": ["2.2.1-0ubuntu1~24.04.1"], **installed},
        "HeldPackages": sorted(f.KUBE_PACKAGES),
        "KernelModuleState": {"overlay": "loaded", "br_netfilter": "loaded"},
        "ActiveSwap": [],
        "FileContents": {"/etc/fstab": [*STOCK_FSTAB[:2], "#" + STOCK_FSTAB[2]], **applied_records(lab, node)},
        "Sysctl": {(key,): {key: value} for key, value in f.SYSCTLS.items()},
        "SystemdStatus": _per_service(True),
        "SystemdEnabled": _per_service(True),
        "KubeObjectsPresent": {p: True for p in facts["KubeObjectsPresent"]},
        "KubeadmInitState": InitState("finished"),
    })
    facts["File"] = {**facts["File"], **{p: _file(mode) for p, (_, mode) in written.items()},
                     f.KEYRING: _file(), f.ADMIN_CONF: _file(600), f.KUBELET_CONF: _file(600),
                     **{p: _file(600) for p in _calico_manifests(lab)}}
    facts["Directory"] = {**facts["Directory"], f.KUBELAB_DIR: _file(700), f.calico_release_dir(lab): _file(700),
                          "/etc/containerd": _file(755),
                          "/home/vagrant/.kube": {**_file(700), "user": "vagrant", "group": "vagrant"}}
    facts["Sha1File"] = {**{p: sha1(text) for p, (text, _) in written.items()},
                         "/etc/fstab": sha1("\n".join(facts["FileContents"]["/etc/fstab"]) + "\n"),
                         f.ADMIN_CONF: ADMIN_CONF_SHA1, "/home/vagrant/.kube/config": ADMIN_CONF_SHA1}
    return facts


def applied_records(lab: Lab, node: Node) -> dict[str, list[str]]:
    """The digest records `kubectl apply` left on a finished control plane (FileContents fact)."""
    if node.role != "control-plane":
        return {}
    records = {f.applied_record(f.calico_manifest(lab, name)): [release_digest(lab, name)]
               for name in f.CALICO_RELEASE_MANIFESTS}
    records[f.applied_record(f.CALICO_INSTALLATION)] = [hashlib.sha256(f.calico_installation(lab).encode()).hexdigest()]
    if lab.dra.example_driver:
        records[f.applied_record(f.DRA_EXAMPLE_DRIVER)] = [hashlib.sha256(f.dra_example_driver(lab).encode()).hexdigest()]
    return records


def cluster_facts(lab: Lab, finished: set[str] = frozenset()) -> dict[str, dict]:
    """Host name -> facts: nodes named in `finished` are done, the others fresh."""
    return {n.name: (finished_node(lab, n) if n.name in finished else fresh_node(lab, n)) for n in lab.nodes}
