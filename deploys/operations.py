"""Operations the stock pyinfra operations do not cover, written the pyinfra way: read facts, yield only
the commands that would change something, and say why when there is nothing to do (`host.noop`).
"""

from __future__ import annotations

import hashlib
from io import StringIO

from pyinfra import host
from pyinfra.api import OperationError, operation
from pyinfra.facts.files import Directory, FileContents, Sha1File, Sha256File
from pyinfra.facts.server import Home
from pyinfra.operations import apt, files

from deploys import containerd_config, fstab
from deploys.facts import (
    ActiveSwap,
    ContainerdDefaultConfig,
    ContainerdVersion,
    ContainerKind,
    HeldPackages,
    KernelModuleState,
    KubeadmInitState,
    KubeObjectsPresent,
)
from deploys.files import (
    ADMIN_CONF,
    CONTAINERD_CONFIG,
    KUBEADM_INIT_FINISHED,
    KUBEADM_INIT_STARTED,
    applied_record,
)
from deploys.lab_host import node_label
from labdef import versions

# How long apt waits for another apt or dpkg (unattended-upgrades, cloud-init) to let go of its locks.
APT_LOCK_TIMEOUT_S = 600
APT_LOCK_RETRY_S = 5


def _error(message: str) -> OperationError:
    return OperationError(f"{node_label(host)}: {message}")


def waiting_for_apt_locks(command: str, attempts: int = APT_LOCK_TIMEOUT_S // APT_LOCK_RETRY_S,
                           pause_s: int = APT_LOCK_RETRY_S) -> str:
    """`command`, run again while another apt or dpkg holds a lock it needs. apt's DPkg::Lock::Timeout only
    covers dpkg's locks taken through apt (apt-pkg/deb/debsystem.cc); `apt-get update` takes
    /var/lib/apt/lists/lock and apt-mark runs dpkg itself, and both fail at once when it is held. LC_ALL=C:
    the messages are translated."""
    return (
        f"attempt=1; until out=$(LC_ALL=C {command} 2>&1); do status=$?; printf '%s\\n' \"$out\"; "
        "printf '%s\\n' \"$out\" | grep -Eq 'Could not get lock|locked by another process' "
        f"&& [ $attempt -lt {attempts} ] || exit $status; "
        f"attempt=$((attempt + 1)); sleep {pause_s}; done; printf '%s\\n' \"$out\""
    )


@operation()
def debs_installed(packages: list[str], extra_install_args: str | None = None):
    """Install `name` or `name=version` packages; refresh the package lists first (a box's lists are as old as
    the box: without them apt installs what the release pocket had), but only when apt.packages finds
    something missing, so a finished node reports no change. Both wait for apt's locks."""
    wait = f"-o DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}"
    install_args = f"{wait} {extra_install_args}" if extra_install_args else wait
    install = list(apt.packages._inner(packages=packages, extra_install_args=install_args))
    if not install:  # apt.packages has said which packages are installed
        return
    yield waiting_for_apt_locks("apt-get update")
    yield from install


@operation()
def debs_held(packages: list[str]):
    held = set(host.get_fact(HeldPackages) or [])
    to_hold = [name for name in packages if name not in held]
    if not to_hold:
        host.noop(f"already held: {', '.join(packages)}")
        return
    yield waiting_for_apt_locks(f"apt-mark hold {' '.join(to_hold)}")


@operation()
def containerd_meets_floor(kubernetes_minor: int, allow_below_floor: bool = False):
    """Refuse an installed containerd below the floor containerd's RELEASES.md gives for this Kubernetes
    minor: kubelet would start and fail in ways that name neither version."""
    installed = host.get_fact(ContainerdVersion)
    if installed is None:
        raise _error("containerd is not installed: `containerd --version` is not available")
    verdict = versions.containerd_verdict(kubernetes_minor, installed)
    if verdict == "unknown":
        host.noop(f"containerd {installed}: no known floor for Kubernetes 1.{kubernetes_minor}, not checked")
        return
    floors = versions.containerd_floors(kubernetes_minor)
    if verdict in ("ok", "newer"):
        host.noop(f"containerd {installed} meets Kubernetes 1.{kubernetes_minor} ({floors})")
        return
    message = (f"containerd {installed} is installed, below what Kubernetes 1.{kubernetes_minor} needs "
               f"({floors}, containerd's RELEASES.md). Fix: set containerd.version in the lab definition to a "
               "version that meets it (`apt-cache policy containerd` on the node lists them), or enable the "
               "pocket or repository that has one (Ubuntu 24.04: noble-updates)")
    if not allow_below_floor:
        raise _error(message)
    host.noop(f"warning: {message}; going on because containerd.allow_below_floor is true")
    yield from ()  # a check: it never changes the node


@operation()
def kernel_module(module: str):
    """Make a kernel module's feature available now. Built-in modules never show in /proc/modules and
    containers (lxc, nspawn) cannot load modules at all: both are detected and reported, not modprobe'd."""
    state = host.get_fact(KernelModuleState, module=module)
    if state == "loaded":
        host.noop(f"kernel module {module} is loaded")
        return
    if state == "builtin":
        host.noop(f"kernel module {module}: built into the kernel (or provided by the host), nothing to load")
        return
    container = host.get_fact(ContainerKind)
    if container:
        raise _error(
            f"kernel module {module} is not available and this node is a {container} container, which "
            f"cannot load modules: run `modprobe {module}` on the machine that hosts it"
        )
    yield f"modprobe {module}"


@operation()
def swap_off():
    active = host.get_fact(ActiveSwap)
    if not active:
        host.noop("no swap in use")
        return
    yield "swapoff -a"


@operation()
def fstab_without_swap(path: str = "/etc/fstab"):
    """Comment out swap entries so swap stays off after a reboot (the whole file is rewritten)."""
    lines = host.get_fact(FileContents, path=path)
    if lines is None:
        host.noop(f"{path} does not exist")
        return
    wanted = fstab.without_swap(lines)
    if wanted == lines:
        host.noop(f"{path} has no active swap entries")
        return
    yield from files.put._inner(src=StringIO("\n".join(wanted) + "\n"), dest=path)


@operation()
def containerd_configured(pause_image: str | None, path: str = CONTAINERD_CONFIG):
    """Write containerd's own defaults with SystemdCgroup = true, CRI enabled and `pause_image` as its sandbox
    image (None keeps containerd's own); restart it on change."""
    default = host.get_fact(ContainerdDefaultConfig)
    if default is None:
        raise _error("containerd is not installed: `containerd config default` is not available")
    try:
        wanted = containerd_config.kubernetes_config(default, pause_image)
    except containerd_config.ContainerdConfigError as err:
        raise _error(str(err)) from None
    commands = list(files.put._inner(src=StringIO(wanted), dest=path, mode="644"))
    if not commands:
        host.noop(f"{path} already has SystemdCgroup = true, CRI enabled and sandbox image {pause_image}")
        return
    yield from commands
    yield "systemctl restart containerd"


# What `kubeadm reset` leaves behind, as its own output says: CNI configuration and iptables rules.
RESET_LEFTOVERS = (
    "rm -rf /etc/cni/net.d",
    ("if command -v iptables >/dev/null; then "
    "iptables -F && iptables -t nat -F && iptables -t mangle -F && iptables -X; fi"),
)


@operation()
def kubeadm_initialised(config_path: str):
    """`kubeadm init` until it has finished once. kubeadm writes admin.conf in its kubeconfig phase and can
    still fail afterwards, so the mark is a record written only when init exits 0; a partial init is
    reset (with what reset leaves) and run again. A finished init is never reset."""
    state = host.get_fact(KubeadmInitState)
    if state.status == "finished":
        host.noop(f"control plane already initialised ({KUBEADM_INIT_FINISHED} exists)")
        return
    if state.status == "finished-unrecorded":  # cluster-info, kube-proxy and coredns exist: record it
        yield f"touch {KUBEADM_INIT_FINISHED}"
        return
    if state.status == "unknown":
        raise _error(
            f"{ADMIN_CONF} exists but kubelab has no record of `kubeadm init` finishing here, and the API "
            f"server cannot tell (kubectl: {state.detail}). Run `up` again once the API server answers; if "
            "`kubeadm init` never finished on this node, run `sudo kubeadm reset -f` there first"
        )
    if state.status == "partial":
        yield "kubeadm reset -f"
        yield from RESET_LEFTOVERS
    yield f"touch {KUBEADM_INIT_STARTED}"
    yield f"kubeadm init --config {config_path}"
    yield f"touch {KUBEADM_INIT_FINISHED}"


@operation()
def user_kubeconfig(user: str):
    """The admin kubeconfig for the login user (~/.kube/config), kept equal to admin.conf, in a ~/.kube the
    user owns (kubectl writes its cache there)."""
    home = host.get_fact(Home, user=user) if user != "root" else "/root"
    if not home:
        raise _error(f"user {user!r} has no home directory on this node")
    kube_dir, dest = f"{home}/.kube", f"{home}/.kube/config"
    admin = host.get_fact(Sha1File, path=ADMIN_CONF)
    if admin is None:
        raise _error(f"{ADMIN_CONF} is missing: `kubeadm init` has not completed on this node")
    owner = f"-o {user} -g $(id -gn {user})"
    directory = host.get_fact(Directory, path=kube_dir)
    commands = [] if directory and directory["user"] == user else [f"install -d -m 700 {owner} {kube_dir}"]
    if host.get_fact(Sha1File, path=dest) != admin:
        commands.append(f"install -m 600 {owner} {ADMIN_CONF} {dest}")
    if not commands:
        host.noop(f"{dest} is up to date in a {kube_dir} owned by {user}")
        return
    yield from commands


@operation()
def manifest_applied(path: str, kubeconfig: str = ADMIN_CONF, content: str | None = None,
                     server_side: bool = False, needs_crds: tuple[str, ...] = ()):
    """`kubectl apply` the manifest at `path` (uploading `content` there first, if given) unless this exact
    content was applied already and its objects still exist. The applied content's sha256 is recorded
    beside it only after the apply succeeded, so a changed download (a new Calico release) is applied
    again and a failed apply is retried. `needs_crds`: CRDs that must exist and be Established first."""
    uploads = [] if content is None else list(files.put._inner(src=StringIO(content), dest=path, mode="600"))
    digest = hashlib.sha256(content.encode()).hexdigest() if content is not None else \
        host.get_fact(Sha256File, path=path)
    if digest is None:
        raise _error(f"{path} is missing: its download did not happen")
    record = applied_record(path)
    if (not uploads and host.get_fact(FileContents, path=record) == [digest]
            and host.get_fact(KubeObjectsPresent, kubeconfig=kubeconfig, manifest=path)):
        host.noop(f"{path} (sha256 {digest[:12]}) was applied and its objects exist in the cluster")
        return
    yield from uploads
    kubectl = f"kubectl --kubeconfig {kubeconfig}"
    if needs_crds:
        crds = " ".join(f"crd/{name}" for name in needs_crds)
        # `kubectl wait` fails at once on an object that does not exist yet (and --for=create needs
        # kubectl 1.31+): poll for the CRDs, bounded, then let wait report what is still missing.
        yield f"for attempt in $(seq 30); do {kubectl} get {crds} >/dev/null 2>&1 && break; sleep 2; done"
        yield f"{kubectl} wait --for condition=established --timeout 120s {crds}"
    side = " --server-side --force-conflicts" if server_side else ""
    yield f"{kubectl} apply{side} -f {path}"
    yield f"echo {digest} > {record}"
