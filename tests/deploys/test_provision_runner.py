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
