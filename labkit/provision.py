"""Run the deploys: bare machines in, a Ready kubeadm cluster and a host kubeconfig out.

`run(lab, inventory)` connects to every host of a pyinfra inventory (groups `control_plane` and `workers`,
host data `node`), runs `deploys.cluster.kubernetes_cluster`, waits for nodes, Calico and CoreDNS, and
writes the kubeconfig to `.lab/<lab name>/kubeconfig` (never ~/.kube/config). Each operation is guarded
by facts, so a second run on a finished cluster reports no changes, and a failed run can be repeated.
Failures name the node, the step and the command's output.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pyinfra.api import BaseStateCallback, Config, Host, Inventory, OperationError, State
from pyinfra.api.connect import connect_all, disconnect_all
from pyinfra.api.deploy import add_deploy
from pyinfra.api.exceptions import PyinfraError
from pyinfra.api.operations import run_ops

from deploys import readiness
from deploys.cluster import kubernetes_cluster
from deploys.files import ADMIN_CONF
from deploys.join import JoinHandoff, workers_to_join
from deploys.kubeconfig import KubeconfigError, lab_kubeconfig
from deploys.lab_host import node_label, node_of, sudo
from labdef.errors import UserError
from labdef.lab import Lab
from labkit.paths import LabPaths

Echo = Callable[[str], None]


@dataclass
class Failure:
    node: str
    step: str
    detail: str

    def __str__(self) -> str:
        return f"{self.node}: {self.step} failed\n" + "\n".join(f"    {line}" for line in self.detail.splitlines())


class ProvisionError(UserError):
    def __init__(self, failures: list[Failure]):
        self.failures = failures
        super().__init__("provisioning failed (re-run resumes after the fix):\n" + "\n".join(map(str, failures)))


@dataclass
class ProvisionReport:
    changes: dict[str, list[str]] = field(default_factory=dict)  # node -> steps that changed something
    joined: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None

    @property
    def changed(self) -> bool:
        return any(self.changes.values())


def default_kubeconfig_path(lab: Lab) -> Path:
    return LabPaths.for_lab(lab.name).kubeconfig


_NOOP = re.compile(r"\[(?P<host>[^\]]+)\]\s*noop: (?P<why>.*)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class NoopNotes(logging.Handler):
    """Collects pyinfra's "[host] noop: why" lines so the progress output can say why nothing changed
    (e.g. "kernel module br_netfilter: built into the kernel")."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.notes: dict[str, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        match = _NOOP.search(_ANSI.sub("", record.getMessage()))
        if match:
            self.notes.setdefault(match["host"].strip(), []).append(match["why"].strip())
        elif record.levelno >= logging.WARNING:  # pyinfra's own warnings still reach the user's logging
            logging.getLogger().handle(record)

    def take(self, host_name: str) -> str:
        return "; ".join(self.notes.pop(host_name, []))


@contextmanager
def _collect_noop_notes(state: State) -> Iterator[NoopNotes]:
    logger = logging.getLogger("pyinfra")
    notes, level, propagate = NoopNotes(), logger.level, logger.propagate
    state.print_noop_info = True
    logger.addHandler(notes)
    # INFO is needed for the noop lines; not propagating keeps pyinfra's per-operation INFO chatter out of
    # the user's console (our progress lines say the same, shorter).
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield notes
    finally:
        logger.removeHandler(notes)
        logger.setLevel(level)
        logger.propagate = propagate


def _step_name(state: State, op_hash: str) -> str:
    return ", ".join(sorted(state.get_op_meta(op_hash).names)) or op_hash


class Progress(BaseStateCallback):
    """Prints one line per operation with each node's outcome and records what failed where."""

    def __init__(self, echo: Echo):
        self.echo = echo
        self.current_step = "connecting"
        self.failed: list[tuple[Host, str]] = []
        self.changes: dict[str, list[str]] = {}
        self.connect_errors: dict[str, str] = {}
        self.notes: NoopNotes | None = None

    def host_connect_error(self, state: State, host: Host, error) -> None:  # type: ignore[override]
        self.connect_errors[host.name] = str(error)

    def operation_start(self, state: State, op_hash: str) -> None:  # type: ignore[override]
        self.current_step = _step_name(state, op_hash)

    def operation_host_error(self, state: State, host: Host, op_hash: str, *args) -> None:  # type: ignore[override]
        # The output is attached to the operation only after this callback, and when the last host
        # fails pyinfra stops before `operation_end`: details are read in `failures`.
        self.failed.append((host, op_hash))

    def operation_end(self, state: State, op_hash: str) -> None:  # type: ignore[override]
        step = _step_name(state, op_hash)
        outcomes = []
        for host, ops in state.ops.items():
            if op_hash not in ops:
                continue
            meta = ops[op_hash].operation_meta
            if not meta.is_complete() or _switched_off(ops[op_hash].global_arguments.get("_if")):
                continue  # e.g. a control-plane step on a worker: not worth a line
            name = node_label(host)
            # Taken whatever the outcome: a step that changed something may still log noop lines
            # (apt.packages on the packages already there), and they must not show up on the next step.
            why = self.notes.take(host.name) if self.notes else ""
            if meta.did_error():
                outcomes.append(f"{name} FAILED")
            elif meta.did_change():
                outcomes.append(f"{name} changed")
                self.changes.setdefault(name, []).append(step)
            else:
                outcomes.append(f"{name} ok ({why})" if why else f"{name} ok")
        if outcomes:
            self.echo(f"{step}: {', '.join(outcomes)}")

    def unreachable(self, state: State) -> list[Failure]:
        """One failure per host `connect_all` could not reach, with pyinfra's reason and the fix."""
        return [
            Failure(node_label(host), "connecting over SSH",
                    f"{self.connect_errors.get(host.name, 'could not connect')}\n"
                    "check the address, user and key in the inventory (for Vagrant: `vagrant ssh-config`)")
            for host in state.inventory if not host.connected
        ]

    def failures(self, state: State, run_error: PyinfraError | None,
                 callback_errors: dict[str, str]) -> list[Failure]:
        """Everything that failed in `run_ops`, by node and step.

        `run_error` is what `run_ops` raised: one of our operations refusing ("node: reason", raised before
        any host is marked failed), or pyinfra giving up ("No hosts remaining!", which the per-host failures
        explain). `callback_errors`: node -> a Python callback's own message, which pyinfra only logs.
        """
        found = []
        if isinstance(run_error, OperationError):
            node, _, reason = str(run_error).partition(": ")
            found.append(Failure(node, self.current_step, reason or str(run_error)))
        elif run_error is not None and not self.failed:
            found.append(Failure("(all nodes)", self.current_step, str(run_error)))
        for host, op_hash in self.failed:
            node = node_label(host)
            meta = state.ops[host][op_hash].operation_meta
            detail = callback_errors.get(node) or (
                _failure_detail(meta) if meta.is_complete() else "(no output recorded)")
            found.append(Failure(node, _step_name(state, op_hash), detail))
        return found


def _switched_off(condition) -> bool:
    if condition is None:
        return False
    try:
        return not all(check() for check in (condition if isinstance(condition, list) else [condition]))
    except Exception:  # noqa: BLE001 - a condition that cannot be evaluated now: show the outcome
        return False


def _failure_detail(meta) -> str:
    commands = getattr(meta, "_commands", None) or []
    lines = []
    if commands:
        lines.append(f"command: {commands[-1]!s}")
    output = "\n".join(part for part in (meta.stdout, meta.stderr) if part)
    lines.append(output or "(no output; see the error above)")
    return "\n".join(lines)


def load_inventory(inventory: Inventory | str | os.PathLike) -> Inventory:
    if isinstance(inventory, Inventory):
        return inventory
    from pyinfra.context import ctx_state
    from pyinfra_cli.inventory import make_inventory  # the CLI's loader reads inventory files

    with ctx_state.use(State()):  # the loader records the file it executes on the current state
        return make_inventory(str(inventory))


def default_sudo(inventory: Inventory) -> None:
    """Non-root SSH users (vagrant, ubuntu) need sudo unless the inventory says otherwise."""
    for host in inventory:
        if host.data.get("_sudo") is None:
            user = host.data.get("ssh_user")
            host.data._sudo = bool(user and user != "root")


def _run_on(host: Host, command: str) -> str:
    ok, output = host.run_shell_command(command, _sudo=sudo(host))
    if not ok:
        raise RuntimeError(f"`{command}` failed:\n{output.stdout}\n{output.stderr}".rstrip())
    return output.stdout


def _control_plane_host(lab: Lab, state: State) -> Host:
    for host in state.inventory.get_active_hosts():
        if node_of(lab, host).role == "control-plane":
            return host
    raise ProvisionError([Failure(lab.control_plane.name, "finding the control plane",
                                  "no inventory host maps to it (check the inventory's `node` data)")])


def export_kubeconfig(lab: Lab, cp: Host, path: Path, echo: Echo) -> Path:
    text = lab_kubeconfig(_run_on(cp, f"cat {ADMIN_CONF}"), lab.name)
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
            return parse(_run_on(cp, command))
        except RuntimeError as err:
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
    inventory = load_inventory(inventory)
    default_sudo(inventory)
    state = State(inventory, config or Config(DIFF=False), check_for_changes=False)
    progress = Progress(echo)
    state.add_callback_handler(progress)

    try:
        connect_all(state)
    except PyinfraError:  # every host failed; each one is reported below
        pass
    unreachable = progress.unreachable(state)
    if unreachable:
        disconnect_all(state)
        raise ProvisionError(unreachable)
    try:
        handoff = JoinHandoff()
        pending = workers_to_join(lab, state)
        add_deploy(state, kubernetes_cluster, lab, handoff, pending, prepare_only)
        run_error = None
        try:
            with _collect_noop_notes(state) as progress.notes:
                run_ops(state)
        except PyinfraError as err:
            run_error = err
        failures = progress.failures(state, run_error, handoff.errors)
        if failures:
            raise ProvisionError(failures)

        report = ProvisionReport(changes=progress.changes, joined=list(handoff.joined))
        echo("no changes" if not report.changed else
             "changed: " + "; ".join(f"{n} ({len(s)} steps)" for n, s in sorted(report.changes.items())))
        if prepare_only:  # node prep only: nothing to wait for, no cluster to export a kubeconfig from
            return report
        cp = _control_plane_host(lab, state)
        if wait_ready:
            try:
                wait_until_ready(lab, cp, timeout, echo)
            except readiness.NotReadyError as err:
                raise ProvisionError([Failure(lab.control_plane.name, "waiting for the cluster", str(err))]) from None
        try:
            report.kubeconfig = export_kubeconfig(lab, cp, kubeconfig_path or default_kubeconfig_path(lab), echo)
        except (RuntimeError, KubeconfigError, OSError) as err:
            raise ProvisionError([Failure(lab.control_plane.name, "exporting the kubeconfig", str(err))]) from None
        return report
    finally:
        disconnect_all(state)
