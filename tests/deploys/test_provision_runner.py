"""labkit.provision's user-facing failures, through pyinfra's real SSH connector."""

from __future__ import annotations

import socket

import pytest
from pyinfra.api import Inventory

from labkit.provision import ProvisionError, run
from tests.deploys.labs import make_lab


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # released on close: nothing listens there


def test_unreachable_node_is_named_with_the_fix():
    lab = make_lab()
    port = closed_port()
    hosts = [(n.name, {"ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "vagrant",
                       "node": {"name": n.name, "ip": str(n.ip), "role": n.role}}) for n in lab.nodes]
    inventory = Inventory((hosts, {}), control_plane=([hosts[0]], {}), workers=(hosts[1:], {}))
    lines: list[str] = []
    with pytest.raises(ProvisionError) as err:
        run(lab, inventory, echo=lines.append)
    message = str(err.value)
    for node in lab.nodes:
        assert f"{node.name}: connecting over SSH failed" in message
    assert "vagrant ssh-config" in message


def test_noop_reasons_are_collected_per_host_and_warnings_still_reach_logging(caplog):
    import logging

    from labkit.provision import NoopNotes

    notes = NoopNotes()
    logger = logging.getLogger("pyinfra.test")
    record = logger.makeRecord("pyinfra", logging.INFO, __file__, 1,
                               "\x1b[1m[sys-worker-01]\x1b[0m     noop: kernel module br_netfilter: built into the kernel",
                               (), None)
    notes.emit(record)
    with caplog.at_level(logging.WARNING):
        notes.emit(logger.makeRecord("pyinfra", logging.WARNING, __file__, 1, "Added host key", (), None))
    assert notes.take("sys-worker-01") == "kernel module br_netfilter: built into the kernel"
    assert notes.take("sys-worker-01") == ""
    assert "Added host key" in caplog.text


def test_kubectl_failing_while_waiting_is_reported_as_something_to_wait_for():
    import json
    from types import SimpleNamespace

    from labkit.provision import wait_until_ready

    nodes = json.dumps({"items": [{"metadata": {"name": n}, "status": {"conditions": [
        {"type": "Ready", "status": "True"}]}} for n in ("k8s-control-plane", "k8s-worker-01")]})
    pods = json.dumps({"items": [
        {"metadata": {"namespace": "calico-system", "name": "calico-node-a", "labels": {"k8s-app": "calico-node"}},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        {"metadata": {"namespace": "kube-system", "name": "coredns-a", "labels": {"k8s-app": "kube-dns"}},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}]})
    answers = iter([(False, "", "The connection to the server 192.168.56.10:6443 was refused"),
                    (True, nodes, ""), (True, pods, "")])

    def run_shell_command(command, **kwargs):
        ok, out, err = next(answers)
        return ok, SimpleNamespace(stdout=out, stderr=err)

    cp = SimpleNamespace(name="k8s-control-plane", data={"_sudo": True}, run_shell_command=run_shell_command)
    lines: list[str] = []
    wait_until_ready(make_lab(), cp, 60, lines.append, interval=0)
    assert lines == [("nodes: waiting for kubectl on the control plane: "
                      "The connection to the server 192.168.56.10:6443 was refused"),
                     "nodes: ready", "Calico and CoreDNS: ready"]


def test_switched_off_steps_are_left_out_of_progress():
    from labkit.provision import _switched_off

    def not_yet():
        raise RuntimeError("Cannot evaluate operation result before execution")

    assert _switched_off(lambda: False) and _switched_off([lambda: True, lambda: False])
    assert not _switched_off(None) and not _switched_off(lambda: True) and not _switched_off(not_yet)
