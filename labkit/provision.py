"""Bring a cluster up: bare machines in, a Ready kubeadm cluster and a host kubeconfig out.

`run(lab, inventory)` runs `deploys.cluster.kubernetes_cluster` over every host of a pyinfra inventory
(groups `control_plane` and `workers`, host data `node`) through labkit.pyinfra_run, waits for nodes,
Calico and CoreDNS, and writes the kubeconfig to `.lab/<lab name>/kubeconfig` (never ~/.kube/config).
Each operation is guarded by facts, so a second run on a finished cluster reports no changes, and a failed
run can be repeated. Failures name the node, the step and the command's output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyinfra.api import Config, Host, Inventory, State

from deploys import readiness
from deploys.cluster import kubernetes_cluster
from deploys.files import ADMIN_CONF
from deploys.join import JoinHandoff, workers_to_join
from deploys.kubeconfig import AdminConfError, lab_kubeconfig
from deploys.lab_host import CommandFailed, node_of, run_command
from labdef.lab import Lab
from labkit.console import Echo
from labkit.paths import LabPaths
from labkit.pyinfra_run import Failure, NodeFailures, connected

RESUMES = "re-run resumes after the fix"


@dataclass
class ProvisionReport:
    changes: dict[str, list[str]] = field(default_factory=dict)  # node -> steps that changed something
    joined: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None

    @property
    def changed(self) -> bool:
        return any(self.changes.values())


def _failed(lab: Lab, step: str, detail: str) -> NodeFailures:
    """A failure on the host's side of the run, after the deploys: it happened on the control plane."""
    return NodeFailures("provisioning", [Failure(lab.control_plane.name, step, detail)], RESUMES)


def _control_plane_host(lab: Lab, state: State) -> Host:
    for host in state.inventory.get_active_hosts():
        if node_of(lab, host).role == "control-plane":
            return host
    raise _failed(lab, "finding the control plane", "no inventory host maps to it (check the inventory's `node` data)")


def export_kubeconfig(lab: Lab, cp: Host, path: Path, echo: Echo) -> Path:
    text = lab_kubeconfig(run_command(cp, f"cat {ADMIN_CONF}", "reading admin.conf"), lab.name)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
        path.write_text(text)
        echo(f"kubeconfig written: {path} (context {lab.name}; export KUBECONFIG={path})")
    else:
        echo(f"kubeconfig up to date: {path}")
    return path


def _polled(cp: Host, command: str, parse: Callable[[str], dict[str, str]]) -> Callable[[], dict[str, str]]:
    """A readiness check; kubectl failing (API server restarting) is one more thing to wait for."""
    def check() -> dict[str, str]:
        try:
            return parse(run_command(cp, command, "kubectl"))
        except CommandFailed as err:
            return {"kubectl on the control plane": str(err).splitlines()[-1]}
    return check


def wait_until_ready(lab: Lab, cp: Host, timeout: float, echo: Echo, interval: float = 5.0) -> None:
    names = [node.name for node in lab.nodes]
    readiness.wait_for("nodes", _polled(cp, readiness.NODES_COMMAND, lambda out: readiness.node_problems(out, names)),
                       timeout, echo, interval=interval)
    readiness.wait_for("Calico and CoreDNS", _polled(cp, readiness.SYSTEM_PODS_COMMAND, readiness.pod_problems),
                       timeout, echo, interval=interval)


def run(lab: Lab, inventory: Inventory | str | os.PathLike, *, wait_ready: bool = True,
        prepare_only: bool = False, timeout: float = 900, kubeconfig_path: Path | None = None, echo: Echo = print,
        config: Config | None = None) -> ProvisionReport:
    with connected(inventory, echo, config) as hosts:
        handoff = JoinHandoff()
        pending = workers_to_join(lab, hosts.state)
        changes = hosts.run("provisioning", kubernetes_cluster, lab, handoff, pending, prepare_only,
                              hint=RESUMES, callback_errors=handoff.errors)
        report = ProvisionReport(changes=changes, joined=list(handoff.joined))
        echo("no changes" if not report.changed else
             "changed: " + "; ".join(f"{n} ({len(s)} steps)" for n, s in sorted(report.changes.items())))
        if prepare_only:  # node prep only: nothing to wait for, no cluster to export a kubeconfig from
            return report
        cp = _control_plane_host(lab, hosts.state)
        if wait_ready:
            try:
                wait_until_ready(lab, cp, timeout, echo)
            except readiness.NotReadyError as err:
                raise _failed(lab, "waiting for the cluster", str(err)) from None
        try:
            report.kubeconfig = export_kubeconfig(lab, cp, kubeconfig_path or LabPaths.for_lab(lab.name).kubeconfig, echo)
        except (CommandFailed, AdminConfError, OSError) as err:
            raise _failed(lab, "exporting the kubeconfig", str(err)) from None
        return report
