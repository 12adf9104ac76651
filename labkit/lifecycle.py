"""The lab's life: bring it up, tear it down, rebuild it, snapshot it. `tasks.py` calls these."""

from __future__ import annotations

import shutil
from pathlib import Path

from labdef.lab import Lab
from labkit.console import step, tool_line, warn
from labkit.paths import LabPaths
from labkit.vagrant import VagrantLab, require_tools, require_virtualbox_pair


def machines(lab: Lab, lab_file: Path) -> VagrantLab:
    return VagrantLab(lab, lab_file, progress=tool_line)


def bring_up_machines(lab: Lab, lab_file: Path) -> None:
    # Before any output: a missing tool, or a Vagrant that cannot drive this VirtualBox, is the whole story.
    require_tools(lab.provider.name)
    if lab.provider.name == "virtualbox":
        warning = require_virtualbox_pair()
        if warning:
            warn(warning)
    vms = machines(lab, lab_file)
    names = ", ".join(n.name for n in lab.nodes)
    step(f"machines: {names} ({lab.provider.name})")
    vms.up()


def tear_down(lab: Lab, lab_file: Path) -> None:
    """Destroy this lab's machines and remove everything it left on the host (kubeconfig included)."""
    paths = LabPaths.for_lab(lab.name)
    step(f"destroying the machines of lab {lab.name}")
    machines(lab, lab_file).destroy()
    if paths.state_dir.exists():
        step(f"removing {paths.state_dir} (exported kubeconfig, SSH details, Vagrant state)")
        shutil.rmtree(paths.state_dir)


def provision(lab: Lab, lab_file: Path, inventory: str | None, timeout: float,
              prepare_only: bool = False) -> Path | None:
    """Provision the Vagrant machines (or the hosts of a pyinfra inventory file) to a Ready cluster.

    With `prepare_only`, stop after node prep (containerd, kernel settings, Kubernetes packages): the state
    worth a snapshot, since everything after it (init, Calico, join) is quick and cluster-specific.
    """
    # pyinfra is slow to import: only when provisioning
    from labkit import provision as provisioning
    from labkit.pyinfra_run import lab_hosts

    where = inventory or "the lab's machines"
    what = "node prep only" if prepare_only else "kubeadm init, Calico, join"
    step(f"provisioning {where}: containerd, Kubernetes {lab.kubernetes.version} packages, {what}")
    report = provisioning.run(lab, lab_hosts(lab, lab_file, inventory), timeout=timeout, prepare_only=prepare_only, echo=tool_line)
    return report.kubeconfig
