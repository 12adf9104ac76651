"""Plan the deploys against recorded facts, the way pyinfra's own operation tests do: a real State and
Inventory, `Host.get_fact` answered from a table instead of a connection, and each operation's command
generator unrolled into the commands it would run. A fact the table lacks fails the test, so every fact
a deploy depends on is written down here.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from unittest.mock import patch

from pyinfra.api import Config, FileUploadCommand, FunctionCommand, Host, Inventory, State, StringCommand
from pyinfra.api.deploy import add_deploy
from pyinfra.context import ctx_host, ctx_state

from deploys.cluster import kubernetes_cluster
from deploys.join import JoinHandoff, workers_to_join
from labdef.lab import Lab

# Which keyword picks the entry in a per-argument fact table (File by path, KernelModuleState by module...).
_FACT_KEYS = ("path", "module", "user", "manifest", "keys", "services", "command")


class MissingFact(KeyError):
    pass


@dataclass
class PlannedOp:
    name: str
    commands: list  # strings for shell commands, ("upload", dest, text) or ("call", function name)
    conditional: bool = False  # guarded by `_if`: decided only while executing


def _fact_key(kwargs: dict):
    for key in _FACT_KEYS:
        if key in kwargs:
            value = kwargs[key]
            return tuple(value) if isinstance(value, list) else value
    return None


def _if_allows(condition) -> bool | None:
    """Evaluate an `_if` now when it only depends on planning-time values; None when it needs the run
    (e.g. "did an earlier operation change something")."""
    if condition is None:
        return True
    conditions = condition if isinstance(condition, list) else [condition]
    try:
        return all(check() for check in conditions)
    except RuntimeError:  # OperationMeta.did_change before execution
        return None


def inventory_for(lab: Lab, user: str = "vagrant") -> Inventory:
    def entry(node):
        return (node.name, {"node": {"name": node.name, "ip": str(node.ip), "role": node.role},
                            "ssh_user": user, "_sudo": user != "root"})

    workers = [entry(n) for n in lab.workers]
    return Inventory(([entry(lab.control_plane), *workers], {}),
                     control_plane=([entry(lab.control_plane)], {}), workers=(workers, {}))


def _describe(command) -> object:
    if isinstance(command, StringCommand):
        return command.get_raw_value()
    if isinstance(command, FileUploadCommand):
        src = command.src
        src.seek(0)
        return ("upload", command.dest, src.read())
    if isinstance(command, FunctionCommand):
        return ("call", command.function.__name__)
    return repr(command)


@contextmanager
def recorded_facts(facts: dict[str, dict]):
    """facts: host name -> fact class name -> value, or -> {argument: value} for per-argument facts."""
    asked: list[tuple[str, str, object]] = []

    def get_fact(self: Host, cls, *args, **kwargs):
        table = facts.get(self.name, {})
        key = _fact_key(kwargs)
        asked.append((self.name, cls.__name__, key))
        if cls.__name__ not in table:
            raise MissingFact(f"{self.name}: no recorded fact {cls.__name__}({kwargs})")
        value = table[cls.__name__]
        if key is None:
            return value
        if not isinstance(value, dict) or key not in value:
            raise MissingFact(f"{self.name}: no recorded fact {cls.__name__} for {key!r}")
        return value[key]

    with patch.object(Host, "get_fact", get_fact):
        yield asked


def plan(lab: Lab, facts: dict[str, dict], prepare_only: bool = False) -> dict[str, list[PlannedOp]]:
    """Node name -> the operations the cluster deploy would run there, in order, with their commands."""
    inventory = inventory_for(lab)
    state = State(inventory, Config(DIFF=False), check_for_changes=False)
    for host in inventory:
        state.activate_host(host)
    planned: dict[str, list[PlannedOp]] = {host.name: [] for host in inventory}
    with recorded_facts(facts):
        handoff = JoinHandoff()
        add_deploy(state, kubernetes_cluster, lab, handoff, workers_to_join(lab, state), prepare_only)
        for op_hash in state.get_op_order():
            name = ", ".join(sorted(state.get_op_meta(op_hash).names))
            for host in inventory:
                op_data = state.ops[host].get(op_hash)
                if op_data is None:
                    continue
                decided = _if_allows(op_data.global_arguments.get("_if"))
                if decided is None:
                    planned[host.name].append(PlannedOp(name, [], conditional=True))
                    continue
                if not decided:
                    planned[host.name].append(PlannedOp(name, []))
                    continue
                with ctx_state.use(state), ctx_host.use(host):
                    commands = [_describe(c) for c in op_data.command_generator()]
                planned[host.name].append(PlannedOp(name, commands))
    return planned


def changes(planned: dict[str, list[PlannedOp]]) -> dict[str, list[str]]:
    """Node name -> names of operations that would run at least one command."""
    return {node: [op.name for op in ops if op.commands] for node, ops in planned.items()}
