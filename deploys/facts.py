"""Facts the stock pyinfra facts do not cover. Each one runs a read-only command on the node."""

from __future__ import annotations

from dataclasses import dataclass

from pyinfra.api import FactBase

from deploys.files import ADMIN_CONF, KUBEADM_INIT_FINISHED, KUBEADM_INIT_STARTED

# How to tell a kernel feature is usable when its module is not in /proc/modules: built-in modules
# never appear there, and inside a container /proc/modules shows the host's list.
MODULE_PROBES = {
    "overlay": "grep -qw overlay /proc/filesystems",
    "br_netfilter": "test -e /proc/sys/net/bridge/bridge-nf-call-iptables",
}


class KernelModuleState(FactBase[str]):
    """'loaded' (a loaded module), 'builtin' (usable without loading), or 'missing'."""

    def command(self, module: str) -> str:
        probe = MODULE_PROBES.get(module, f"test -d /sys/module/{module}")
        return (
            f"if grep -q '^{module} ' /proc/modules 2>/dev/null; then echo loaded; "
            f"elif {probe}; then echo builtin; else echo missing; fi"
        )

    def process(self, output: list[str]) -> str:
        return output[-1].strip()


class ContainerKind(FactBase[str | None]):
    """The container technology this node runs in (lxc, systemd-nspawn, docker...), None on a VM."""

    def command(self) -> str:
        return "systemd-detect-virt --container 2>/dev/null || true"

    def process(self, output: list[str]) -> str | None:
        kind = output[-1].strip() if output else "none"
        return None if kind in ("", "none") else kind


class ActiveSwap(FactBase[list[str]]):
    """Swap devices and files in use, from /proc/swaps."""

    default = list

    def command(self) -> str:
        return "tail -n +2 /proc/swaps"

    def process(self, output: list[str]) -> list[str]:
        return [line.split()[0] for line in output if line.strip()]


class HeldPackages(FactBase[list[str]]):
    """Packages on `apt-mark hold`."""

    default = list

    def requires_command(self) -> str:
        return "apt-mark"

    def command(self) -> str:
        return "apt-mark showhold"

    def process(self, output: list[str]) -> list[str]:
        return sorted(line.strip() for line in output if line.strip())


class ContainerdDefaultConfig(FactBase[str | None]):
    """`containerd config default`: the installed version's own defaults, None before it is installed."""

    def requires_command(self) -> str:
        return "containerd"

    def command(self) -> str:
        return "containerd config default"

    def process(self, output: list[str]) -> str:
        return "\n".join(output) + "\n"


class KubeObjectsPresent(FactBase[bool]):
    """Whether every object in a manifest on the node exists in the cluster (`kubectl get -f`)."""

    default = bool

    def command(self, kubeconfig: str, manifest: str) -> str:
        return (
            f"kubectl --kubeconfig {kubeconfig} get -f {manifest} -o name >/dev/null 2>&1 "
            "&& echo present || echo absent"
        )

    def process(self, output: list[str]) -> bool:
        return output[-1].strip() == "present"


@dataclass(frozen=True)
class InitState:
    # finished: kubelab's record that `kubeadm init` exited 0. partial: init started here and never
    # finished, or admin.conf exists and the API server says init's last objects are missing.
    # finished-unrecorded: no record, but those objects exist. unknown: no record, API server unreachable.
    # absent: init never ran.
    status: str
    detail: str = ""


# Created by init's last phases (bootstrap-token, addons): an admin.conf without them is a partial init.
INIT_LAST_OBJECTS = ("-n kube-public get configmap/cluster-info",
                     "-n kube-system get daemonset/kube-proxy deployment/coredns")


class KubeadmInitState(FactBase[InitState]):
    """How far `kubeadm init` got on this node (see InitState)."""

    def command(self) -> str:
        kubectl = f"kubectl --kubeconfig {ADMIN_CONF}"
        objects = " && ".join(f"{kubectl} {args} -o name 2>&1" for args in INIT_LAST_OBJECTS)
        return (
            f"if [ -e {KUBEADM_INIT_FINISHED} ]; then echo finished; "
            f"elif [ -e {KUBEADM_INIT_STARTED} ]; then echo partial; "
            f"elif [ ! -e {ADMIN_CONF} ]; then echo absent; "
            f"elif out=$({objects}); then echo finished-unrecorded; "
            'else case "$out" in *"(NotFound)"*) echo partial ;; *) echo unknown ;; esac; echo "$out"; fi'
        )

    def process(self, output: list[str]) -> InitState:
        return InitState(output[0].strip(), " ".join(line.strip() for line in output[1:]))


class ContainerdVersion(FactBase[str | None]):
    """The installed containerd's release (2.2.1), from `containerd --version`, None before it is installed.
    The third field is the release in every packaging: Debian's "containerd github.com/containerd/containerd
    1.6.20~ds1 ...", containerd.io's "containerd containerd.io 1.7.28 ...", 2.x's "... v2.2.1 ..."."""

    def requires_command(self) -> str:
        return "containerd"

    def command(self) -> str:
        return "containerd --version"

    def process(self, output: list[str]) -> str | None:
        fields = output[-1].split() if output else []
        return fields[2].removeprefix("v") if len(fields) >= 3 else None
