"""`./lab doctor`: is this host ready for the lab? Each check says what it found and, if wrong, the fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from labdef import versions
from labdef.errors import UserError
from labdef.lab import Lab, missing_files, version_warnings
from labkit import lab_plugins
from labkit.vagrant import PROVIDER_TOOLS, VAGRANT_INSTALL_HINT, require_virtualbox_pair, tool_output
from scheduler.feature_gates import KUBERNETES_GATES
from scheduler.framework import in_tree_registry

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str
    detail: str


def _version_of(command: list[str]) -> str | None:
    output = tool_output(command)
    return output.splitlines()[0] if output else None


def check_python_deps() -> Iterator[Check]:
    yield Check("python", OK, sys.version.split()[0])  # ./lab refuses anything older than 3.11
    wrong = []
    for spec in metadata.requires("kubelab") or []:
        req = Requirement(spec)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            wrong.append(f"{req.name} missing")
            continue
        if not req.specifier.contains(have, prereleases=True):
            wrong.append(f"{req.name} {have} (want {req.specifier})")
    if wrong:
        yield Check("python packages", FAIL, "; ".join(wrong) + " - run ./lab again to reinstall them")
    else:
        yield Check("python packages", OK, "all pinned versions installed")


def check_vagrant(lab: Lab) -> Iterator[Check]:
    version = _version_of(["vagrant", "--version"]) if shutil.which("vagrant") else None
    if not version:
        yield Check("vagrant", FAIL, f"not found: {VAGRANT_INSTALL_HINT}")
        return
    yield Check("vagrant", OK, version)
    provider = lab.provider.name
    tool, hint = PROVIDER_TOOLS[provider]
    version = _version_of([tool, "--version"]) if shutil.which(tool) else None
    yield (Check(provider, OK, f"{tool} {version}") if version
           else Check(provider, FAIL, f"`{tool}` not found: {hint}"))
    if provider == "virtualbox" and version:
        yield _virtualbox_pair()
    if provider == "lxc":
        # Debian's vagrant-lxc package shows up as a system plugin: "vagrant-lxc (1.4.3, system)".
        listed = subprocess.run(["vagrant", "plugin", "list"], check=False, capture_output=True,
                                text=True).stdout
        found = [ln.strip() for ln in listed.splitlines() if ln.startswith("vagrant-lxc")]
        yield (Check("vagrant-lxc", OK, found[0]) if found
               else Check("vagrant-lxc", FAIL, "plugin not installed: " + hint))


def _virtualbox_pair() -> Check:
    try:
        warning = require_virtualbox_pair()
    except UserError as err:
        return Check("vagrant + virtualbox", FAIL, str(err))
    return (Check("vagrant + virtualbox", WARN, warning) if warning
            else Check("vagrant + virtualbox", OK, "this Vagrant drives this VirtualBox"))


def _host_memory_mb(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Linux: MemTotal in /proc/meminfo (kB). macOS has no /proc: `sysctl -n hw.memsize` (bytes). 0: unknown."""
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(re.findall(r"\d+", line)[0]) // 1024
        return 0
    memsize = tool_output(["sysctl", "-n", "hw.memsize"])
    return int(memsize) // (1024 * 1024) if memsize.isdigit() else 0


def check_host_size(lab: Lab) -> Iterator[Check]:
    cpus, need_cpus = os.cpu_count() or 1, max(n.cpus for n in lab.nodes)
    if cpus < need_cpus:
        yield Check("host CPUs", FAIL, f"{cpus} CPUs; a node asks for {need_cpus}: lower nodes[].cpus")
    else:
        total = sum(n.cpus for n in lab.nodes)
        note = f" (nodes ask {total} in all: they will share)" if total > cpus else ""
        yield Check("host CPUs", OK, f"{cpus}{note}")
    memory, need = _host_memory_mb(), sum(n.memory_mb for n in lab.nodes)
    if memory and memory < need:
        yield Check("host memory", FAIL, f"{memory} MB; the nodes ask for {need} MB: lower nodes[].memory_mb")
    elif memory and memory < need + 2048:
        yield Check("host memory", WARN, f"{memory} MB for {need} MB of nodes leaves under 2 GB for the host")
    else:
        yield Check("host memory", OK, f"{memory} MB for {need} MB of nodes")


def check_network(lab: Lab, sys_class_net: Path = Path("/sys/class/net"),
                  platform: str = sys.platform) -> Iterator[Check]:
    """VirtualBox creates its host-only adapter itself (the range was validated with the definition);
    the lxc provider needs the bridge named in the definition to exist already."""
    cidr = lab.network.host_only_cidr
    if lab.provider.name != "lxc":
        yield Check("host-only network", OK, f"{cidr}: VirtualBox allows it and creates the adapter")
        return
    if platform != "linux":
        yield Check("lxc bridge", FAIL, f"the lxc provider needs a Linux host (this is {platform}): set "
                                        "provider.name: virtualbox in the lab definition")
        return
    bridge = lab.provider.lxc_bridge
    if (sys_class_net / str(bridge)).exists():
        yield Check("lxc bridge", OK, f"{bridge} exists (node addresses in {cidr})")
    else:
        yield Check("lxc bridge", FAIL, f"no bridge {bridge} on this host: create it with an address in {cidr} "
                                        f"(ip link add {bridge} type bridge; ip addr add ... dev {bridge}; "
                                        f"ip link set {bridge} up)")


def check_versions(lab: Lab) -> Iterator[Check]:
    """The pairings the lab definition checked (a refused one never gets here), then its warnings."""
    k8s, minor = lab.kubernetes.version, lab.kubernetes.minor_number
    low, high = versions.CALICO.get(versions.calico_minor(lab.cni.calico_version), (None, None))
    if low is not None and low <= minor <= high:
        yield Check("calico", OK, f"{lab.cni.calico_version} supports Kubernetes 1.{low} to 1.{high}, {k8s} included")
    if minor in versions.KUBERNETES:
        pin = lab.containerd.version or "the distribution's current package (checked on each node)"
        yield Check("containerd", OK, f"Kubernetes {k8s} needs {versions.containerd_floors(minor)}: {pin}")
        yield Check("kubeadm", OK, f"config {versions.kubeadm_api(minor)}, sandbox image {versions.pause_image(minor)}")
    for warning in version_warnings(lab):
        field, _, detail = warning.partition(": ")
        yield Check(f"versions ({field})", WARN, detail)


def check_feature_gates(lab: Lab) -> Iterator[Check]:
    """kubernetes.feature_gates and runtime_config (already checked against the minor) and where they go."""
    k8s = lab.kubernetes
    if k8s.feature_gates:
        alpha = [name for name in sorted(k8s.feature_gate_values)
                 if KUBERNETES_GATES[k8s.minor_number][name].stage == "ALPHA"]
        note = f"; alpha: {', '.join(alpha)}" if alpha else ""
        yield Check("feature gates", OK, f"{k8s.feature_gates_flag} (Kubernetes 1.{k8s.minor_number}{note}) for "
                                         "kube-apiserver, kube-controller-manager, kube-scheduler, every kubelet and "
                                         "the lab's scheduler; set when `up` creates the cluster")
    if k8s.runtime_config:
        yield Check("runtime config", OK, f"kube-apiserver --runtime-config={k8s.runtime_config_flag}; set when "
                                          "`up` creates the cluster")


# Runs a command on one lab node (name, argv) and returns its exit code and output; tasks.py builds it from the
# lab's recorded SSH details (labkit.ssh).
NodeRunner = Callable[[str, list[str]], "subprocess.CompletedProcess[str]"]


def check_dra_image(lab: Lab, run: NodeRunner) -> Iterator[Check]:
    """dra.example_driver: the driver's image tag cannot be confirmed offline, so ask each worker's containerd
    for it (and pull it when missing: a tag that does not exist, or a registry out of reach, fails here
    instead of leaving the DaemonSet in ImagePullBackOff)."""
    if not lab.dra.example_driver:
        return
    image = lab.dra.image
    for worker in lab.workers:
        try:
            present = run(worker.name, ["sudo", "crictl", "inspecti", "--quiet", image])
        except (OSError, UserError) as err:
            yield Check(f"dra image ({worker.name})", WARN, f"not checked: {err}; run doctor again once `up` has "
                                                             "created the machines")
            return
        if present.returncode == 0:
            yield Check(f"dra image ({worker.name})", OK, f"{image} is in the node's containerd")
            continue
        if present.returncode == 255:  # ssh's own failure: the machine is not up
            yield Check(f"dra image ({worker.name})", WARN, f"not checked: {worker.name} is unreachable over ssh "
                                                             f"({present.stderr.strip() or 'exit 255'}); run doctor "
                                                             "again once `up` has created the machines")
            continue
        pulled = run(worker.name, ["sudo", "crictl", "pull", image])
        if pulled.returncode == 0:
            yield Check(f"dra image ({worker.name})", OK, f"{image} pulled on the node: the tag exists")
        else:
            reason = (pulled.stderr or pulled.stdout).strip().splitlines()[-1:] or ["no output"]
            yield Check(f"dra image ({worker.name})", FAIL, f"{image} could not be pulled ({reason[0]}); set "
                                                             "dra.image to a tag the registry has, or load the "
                                                             f"image into the node's containerd (ctr -n k8s.io "
                                                             "images import)")


def check_lab_files(lab: Lab) -> Iterator[Check]:
    """The files the lab definition names (scenario files) are there."""
    missing = missing_files(lab)
    if missing:
        yield Check("lab files", FAIL, "; ".join(missing))
    elif lab.placement.scenarios or lab.scheduler.plugins:
        yield Check("lab files", OK, f"the plugin folders and scenario files it names are in {lab.base_dir}")


def check_scheduler_plugins(lab: Lab) -> Iterator[Check]:
    """The lab's plugins load and scheduler.profile fits them, as the scheduler will check both."""
    if missing_files(lab):
        return  # check_lab_files names them
    try:
        plugins = lab_plugins.checked_registry(lab)
    except UserError as err:
        yield Check("scheduler plugins", FAIL, str(err))
        return
    own = [name for name in plugins if name not in in_tree_registry()]
    yield Check("scheduler plugins", OK, f"{len(own)} of the lab's loaded ({', '.join(own) or 'none'}); "
                                        "scheduler.profile fits them")


def run_checks(lab: Lab) -> list[Check]:
    return [*check_python_deps(), *check_vagrant(lab), *check_host_size(lab), *check_network(lab),
            *check_versions(lab), *check_feature_gates(lab), *check_lab_files(lab), *check_scheduler_plugins(lab)]
