"""The host side's one way to run pyinfra deploys: load and connect an inventory, run a deploy over it with
one progress line per step, and report what failed by node and step.

    with connected(inventory, echo) as hosts:
        changes = hosts.run("provisioning", kubernetes_cluster, lab, ...)

Non-root SSH users (vagrant, ubuntu) get sudo unless the inventory says otherwise. A host that cannot be
reached, a step that fails on a node, one of our operations refusing, or a Python callback's own error all
end as one `NodeFailures` naming each node and step with the command's output.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyinfra.api import BaseStateCallback, Config, FactBase, Host, Inventory, OperationError, State
from pyinfra.api.connect import connect_all, disconnect_all
from pyinfra.api.deploy import add_deploy
from pyinfra.api.exceptions import PyinfraError
from pyinfra.api.operations import run_ops
from pyinfra.connectors.sshuserclient.client import get_host_keys
from pyinfra.context import ctx_state

from deploys.lab_host import node_label
from labdef.errors import UserError
from labdef.lab import Lab
from labkit.console import Echo
from labkit.inventory import pyinfra_inventory, recorded_groups


@dataclass
class Failure:
    node: str
    step: str
    detail: str

    def __str__(self) -> str:
        return f"{self.node}: {self.step} failed\n" + "\n".join(f"    {line}" for line in self.detail.splitlines())


class NodeFailures(UserError):
    """Steps failed on nodes; the message names each node and step with what it printed."""

    def __init__(self, what: str, failures: list[Failure], hint: str = "") -> None:
        self.failures = failures
        super().__init__(f"{what} failed{f' ({hint})' if hint else ''}:\n" + "\n".join(map(str, failures)))


def lab_hosts(lab: Lab, lab_file: Path, inventory_file: str | os.PathLike | None = None) -> Inventory:
    """The hosts a verb runs on: the lab's machines as `up` recorded them, or the hosts of a pyinfra inventory
    file of real machines."""
    if inventory_file is None:
        return pyinfra_inventory(recorded_groups(lab))
    # Inventory files read the lab definition named by KUBELAB_FILE: make it this one.
    os.environ["KUBELAB_FILE"] = str(lab_file)
    return load_inventory(inventory_file)


def load_inventory(inventory: Inventory | str | os.PathLike) -> Inventory:
    """An Inventory as given, or the hosts of a pyinfra inventory file."""
    if isinstance(inventory, Inventory):
        return inventory
    # The CLI's loader reads inventory files; importing pyinfra_cli monkey-patches the process (gevent),
    # so only this path imports it.
    from pyinfra_cli.inventory import make_inventory

    with ctx_state.use(State()):  # the loader records the file it executes on the current state
        return make_inventory(str(inventory))


def default_sudo(inventory: Inventory) -> None:
    """Non-root SSH users (vagrant, ubuntu) need sudo unless the inventory says otherwise."""
    for host in inventory:
        if host.data.get("_sudo") is None:
            user = host.data.get("ssh_user")
            host.data._sudo = bool(user and user != "root")


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


class ConnectedHosts:
    """Connected hosts of one inventory; `run` runs one deploy over them."""

    def __init__(self, state: State, progress: Progress) -> None:
        self.state = state
        self.progress = progress

    def run(self, what: str, deploy: Callable[..., None], *args: object, hint: str = "",
            callback_errors: dict[str, str] | None = None) -> dict[str, list[str]]:
        """Run `deploy(*args)` on every host; returns node -> the steps that changed something.

        Raises NodeFailures("{what} failed ({hint})") naming each failed node and step. `callback_errors`
        (node -> message) is filled by the deploy's Python callbacks, whose errors pyinfra only logs.
        """
        add_deploy(self.state, deploy, *args)
        run_error = None
        try:
            with _collect_noop_notes(self.state) as self.progress.notes:
                run_ops(self.state)
        except PyinfraError as err:
            run_error = err
        failures = self.progress.failures(self.state, run_error, callback_errors or {})
        if failures:
            raise NodeFailures(what, failures, hint)
        return self.progress.changes


    def facts(self, fact: type[FactBase], **arguments: object) -> dict[str, Any]:
        """One fact of every host, by node name (read over the open connections, no operation run)."""
        return {node_label(host): host.get_fact(fact, **arguments) for host in self.state.inventory}


def forget_host_keys() -> None:
    """Make pyinfra read the known_hosts files anew on its next connection. It keeps each file's keys for the
    life of the process, as first read (and writes accepted keys to the file only): a process that connects
    again after the machines were re-created (`deploy-scheduler --watch` across a `./lab rebuild`) would
    otherwise hold the old keys of a known_hosts file that was reset, and refuse the new ones as changed."""
    get_host_keys.cache.clear()


@contextmanager
def connected(inventory: Inventory | str | os.PathLike, echo: Echo, config: Config | None = None) -> Iterator[ConnectedHosts]:
    """Every host of the inventory connected over SSH (NodeFailures naming each one that is not);
    disconnected on the way out."""
    inventory = load_inventory(inventory)
    default_sudo(inventory)
    forget_host_keys()
    state = State(inventory, config or Config(DIFF=False), check_for_changes=False)
    progress = Progress(echo)
    state.add_callback_handler(progress)
    try:
        try:
            connect_all(state)
        except PyinfraError:  # every host failed; each one is reported below
            pass
        unreachable = progress.unreachable(state)
        if unreachable:
            raise NodeFailures("connecting to the nodes", unreachable)
        yield ConnectedHosts(state, progress)
    finally:
        disconnect_all(state)
