"""The pyinfra runner's user-facing progress and failures (labkit.pyinfra_run, driven by labkit.provision),
through pyinfra's real SSH connector."""

from __future__ import annotations

import pytest
from pyinfra.api import Inventory
from pyinfra.connectors.sshuserclient.client import get_host_keys

from kubeapi_testserver.fixtures import free_port
from labkit.image import BuiltImage
from labkit.provision import run
from labkit.pyinfra_run import NodeFailures, forget_host_keys
from labkit.scheduler_deploy.image_delivery import side_load
from tests.deploys.docker_archives import layer_tar, write_docker_archive
from tests.deploys.labs import make_lab


def unreachable_inventory(lab) -> Inventory:
    """The lab's nodes on a loopback port nothing listens on."""
    port = free_port()
    hosts = [(n.name, {"ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "vagrant",
                       "node": {"name": n.name, "ip": str(n.ip), "role": n.role}}) for n in lab.nodes]
    return Inventory((hosts, {}), control_plane=([hosts[0]], {}), workers=(hosts[1:], {}))


def test_unreachable_node_is_named_with_the_fix():
    lab = make_lab()
    inventory = unreachable_inventory(lab)
    lines: list[str] = []
    with pytest.raises(NodeFailures) as err:
        run(lab, inventory, echo=lines.append)
    message = str(err.value)
    for node in lab.nodes:
        assert f"{node.name}: connecting over SSH failed" in message
    assert "vagrant ssh-config" in message


def test_side_load_reports_unreachable_nodes_as_provisioning_does(tmp_path):
    """deploy-scheduler's side-load runs through the same runner: each node named, with the fix."""
    lab = make_lab()
    archive = write_docker_archive(tmp_path / "image.tar", "localhost/kubelab-scheduler:1", [layer_tar({})])
    image = BuiltImage("localhost/kubelab-scheduler:1", archive, "sha256:" + "0" * 64, "test", 0.0)
    with pytest.raises(NodeFailures) as err:
        side_load(unreachable_inventory(lab), image, echo=lambda line: None)
    message = str(err.value)
    for node in lab.nodes:
        assert f"{node.name}: connecting over SSH failed" in message
    assert "vagrant ssh-config" in message


def test_noop_reasons_are_collected_per_host_and_warnings_still_reach_logging(caplog):
    import logging

    from labkit.pyinfra_run import NoopNotes

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
    from labkit.pyinfra_run import _switched_off

    def not_yet():
        raise RuntimeError("Cannot evaluate operation result before execution")

    assert _switched_off(lambda: False) and _switched_off([lambda: True, lambda: False])
    assert not _switched_off(None) and not _switched_off(lambda: True) and not _switched_off(not_yet)


class FakeMeta:
    """The parts of pyinfra's OperationMeta that Progress reads, for one host's finished operation."""

    def __init__(self, outcome: str, stdout: str = "", stderr: str = "", commands: tuple = ()):
        self.outcome, self.stdout, self.stderr, self._commands = outcome, stdout, stderr, list(commands)

    def is_complete(self) -> bool:
        return True

    def did_error(self) -> bool:
        return self.outcome == "error"

    def did_change(self) -> bool:
        return self.outcome == "changed"


class FakeHost:  # hashed by identity, as pyinfra's hosts are
    def __init__(self, node: str):
        self.name = f"ssh-{node}"
        self.data = {"node": {"name": node}}


def fake_state(ops: dict[FakeHost, dict[str, FakeMeta]]):
    from types import SimpleNamespace

    return SimpleNamespace(
        ops={host: {h: SimpleNamespace(operation_meta=meta, global_arguments={}) for h, meta in by_hash.items()}
             for host, by_hash in ops.items()},
        get_op_meta=lambda op_hash: SimpleNamespace(names={f"step {op_hash}"}))


def test_noop_notes_of_a_step_that_changed_do_not_reach_the_next_step():
    from labkit.pyinfra_run import NoopNotes, Progress

    host = FakeHost("k8s-worker-01")
    state = fake_state({host: {"1": FakeMeta("changed"), "2": FakeMeta("ok")}})
    lines: list[str] = []
    progress = Progress(lines.append)
    progress.notes = NoopNotes()
    progress.notes.notes[host.name] = ["package curl is installed"]  # logged while step 1 installed others
    progress.operation_end(state, "1")
    progress.notes.notes.setdefault(host.name, []).append("kernel module overlay is loaded")
    progress.operation_end(state, "2")
    assert lines == ["step 1: k8s-worker-01 changed", "step 2: k8s-worker-01 ok (kernel module overlay is loaded)"]
    assert progress.changes == {"k8s-worker-01": ["step 1"]}


def test_failures_come_from_one_place_with_a_callbacks_own_message_first():
    from pyinfra.api import OperationError
    from pyinfra.api.exceptions import PyinfraError

    from labkit.pyinfra_run import Progress

    cp, worker = FakeHost("k8s-control-plane"), FakeHost("k8s-worker-01")
    state = fake_state({cp: {"1": FakeMeta("error", stderr="E: Unable to locate package kubelet",
                                               commands=("apt-get install kubelet",))},
                        worker: {"2": FakeMeta("error")}})
    progress = Progress(lambda line: None)
    progress.failed = [(cp, "1"), (worker, "2")]
    callback_errors = {"k8s-worker-01": "kubeadm join failed: `kubeadm join`\n[preflight] port 10250 is in use"}

    found = progress.failures(state, PyinfraError("No hosts remaining!"), callback_errors)
    assert [(f.node, f.step) for f in found] == [("k8s-control-plane", "step 1"), ("k8s-worker-01", "step 2")]
    assert found[0].detail == "command: apt-get install kubelet\nE: Unable to locate package kubelet"
    assert found[1].detail == callback_errors["k8s-worker-01"]  # pyinfra recorded no output for it

    (refused,) = Progress(lambda line: None).failures(
        state, OperationError("k8s-worker-01: kernel module br_netfilter is not available"), {})
    assert (refused.node, refused.detail) == ("k8s-worker-01", "kernel module br_netfilter is not available")
    (given_up,) = Progress(lambda line: None).failures(state, PyinfraError("No hosts remaining!"), {})
    assert (given_up.node, given_up.detail) == ("(all nodes)", "No hosts remaining!")


def test_each_connection_reads_the_known_hosts_file_as_it_is_now(tmp_path) -> None:
    """pyinfra keeps a known_hosts file's keys for the life of the process, as first read; a lab re-created
    since (its known_hosts reset, new host keys) would then be refused as a changed host in a long-running
    process (deploy-scheduler --watch). forget_host_keys, called by every `connected`, drops that copy."""
    known_hosts = tmp_path / "known_hosts"
    old = "10.213.0.10 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    known_hosts.write_text(old)
    files = (str(known_hosts),)
    assert "10.213.0.10" in get_host_keys(files)
    known_hosts.unlink()  # the machines were re-created: the lab starts its known_hosts anew
    assert "10.213.0.10" in get_host_keys(files)  # pyinfra's copy, as first read
    forget_host_keys()
    assert "10.213.0.10" not in get_host_keys(files)
