"""Workers join with a token minted on the control plane during the same run.

pyinfra fixes operation arguments when the deploy code runs, long before the control plane exists, so the
token travels through a `JoinHandoff` that one `python.call` callback fills on the control plane and a
later one reads on each worker. Minting it at join time also matters because kubeadm's tokens expire
(24 h by default). Both only run when some worker has no kubelet.conf yet.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from io import StringIO

from pyinfra import host
from pyinfra.api import Host, State
from pyinfra.api.deploy import deploy
from pyinfra.facts.files import File as FileFact
from pyinfra.operations import python

from deploys import files as node_files
from deploys.lab_host import CommandFailed, node_label, node_of, run_command, sudo
from labdef.lab import Lab

TOKEN_TTL = "1h"  # only needs to outlive this run
_JOIN_COMMAND = re.compile(
    r"kubeadm join (?P<endpoint>\S+) --token (?P<token>[a-z0-9]{6}\.[a-z0-9]{16})"
    r" --discovery-token-ca-cert-hash (?P<hash>sha256:[0-9a-f]{64})"
)


class JoinError(RuntimeError):
    pass


@dataclass
class JoinCredentials:
    endpoint: str
    token: str
    ca_cert_hash: str


@dataclass
class JoinHandoff:
    """Carries the join credentials from the control plane's callback to the workers' callbacks."""

    credentials: JoinCredentials | None = None
    joined: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # node -> why its callback failed

    def record(self, node: str, error: Exception) -> None:
        self.errors[node] = str(error)


def parse_join_command(output: str) -> JoinCredentials:
    match = _JOIN_COMMAND.search(output)
    if not match:
        raise JoinError(f"`kubeadm token create --print-join-command` printed no join command:\n{output}")
    return JoinCredentials(match["endpoint"], match["token"], match["hash"])


def mint_join_token(state: State, host: Host, handoff: JoinHandoff) -> None:
    try:
        output = run_command(host, f"kubeadm token create --ttl {TOKEN_TTL} --print-join-command",
                      "minting a join token")
        handoff.credentials = parse_join_command(output)
    except (CommandFailed, JoinError) as err:
        handoff.record(node_label(host), err)
        raise JoinError(str(err)) from None


def join_node(state: State, host: Host, lab: Lab, handoff: JoinHandoff) -> None:
    try:
        _join(host, lab, handoff)
    except (CommandFailed, JoinError) as err:
        handoff.record(node_label(host), err)
        raise JoinError(str(err)) from None


def _join(host: Host, lab: Lab, handoff: JoinHandoff) -> None:
    node = node_of(lab, host)
    if host.get_fact(FileFact, path=node_files.KUBELET_CONF):  # joined since planning: leave it alone
        return
    if handoff.credentials is None:
        raise JoinError(f"no join token: minting one on {lab.control_plane.name} failed earlier")
    creds = handoff.credentials
    config = node_files.kubeadm_join_config(lab, node, creds.token, creds.ca_cert_hash)
    path = node_files.KUBEADM_JOIN_CONFIG
    run_command(host, f"install -d -m 700 {node_files.KUBELAB_DIR}", "creating the config directory")
    if not host.put_file(StringIO(config), path, _sudo=sudo(host)):
        raise JoinError(f"could not upload the join configuration to {path}")
    try:
        run_command(host, f"chmod 600 {path} && kubeadm join --config {shlex.quote(path)}", "kubeadm join")
    finally:
        host.run_shell_command(f"rm -f {path}", _sudo=sudo(host))  # it holds a live token
    handoff.joined.append(node.name)


def workers_to_join(lab: Lab, state: State) -> list[str]:
    """Workers without /etc/kubernetes/kubelet.conf: new ones, or ones whose join never finished."""
    pending = []
    for target in state.inventory.get_active_hosts():
        node = node_of(lab, target)
        if node.role == "worker" and not target.get_fact(FileFact, path=node_files.KUBELET_CONF):
            pending.append(node.name)
    return pending


@deploy("Join workers")
def join_workers(lab: Lab, handoff: JoinHandoff, pending: list[str]) -> None:
    node = node_of(lab, host)
    mints = node.role == "control-plane" and bool(pending)
    joins = node.name in pending
    python.call(name="Mint a join token", function=mint_join_token, handoff=handoff, _if=lambda: mints)
    python.call(name="kubeadm join", function=join_node, lab=lab, handoff=handoff, _if=lambda: joins)
