"""The join handoff: the token minted by the control plane's callback reaches the workers' callbacks."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import yaml

from deploys import files as f
from deploys.join import JoinError, JoinHandoff, join_node, mint_join_token, parse_join_command
from tests.deploys.labs import make_lab

HASH = "sha256:" + "3f" * 32
JOIN_LINE = f"kubeadm join 192.168.56.10:6443 --token k9x2ab.0123456789abcdef --discovery-token-ca-cert-hash {HASH} \n"


@dataclass
class Output:
    stdout: str = ""
    stderr: str = ""


@dataclass
class RecordingHost:
    """Stands in for a connected pyinfra Host: records commands and uploads, answers from a script."""

    name: str
    data: dict
    answers: dict = field(default_factory=dict)  # command prefix -> (ok, stdout)
    files: dict = field(default_factory=dict)
    commands: list = field(default_factory=list)

    def run_shell_command(self, command, **kwargs):
        self.commands.append((command, kwargs.get("_sudo")))
        for prefix, (ok, out) in self.answers.items():
            if command.startswith(prefix):
                return ok, Output(stdout=out, stderr="" if ok else "boom")
        return True, Output()

    def put_file(self, src, dest, **kwargs):
        self.files[dest] = src.read()
        return True

    def get_fact(self, cls, **kwargs):
        return {"mode": 600} if kwargs.get("path") in self.files else None


def host_for(node, **answers) -> RecordingHost:
    return RecordingHost(node.name, {"node": {"name": node.name, "ip": str(node.ip), "role": node.role},
                                     "_sudo": True}, answers)


def test_token_minted_on_the_control_plane_is_used_by_the_worker():
    lab = make_lab(workers=2)
    handoff = JoinHandoff()
    cp = host_for(lab.control_plane, **{"kubeadm token create": (True, "W0000 noise\n" + JOIN_LINE)})
    mint_join_token(None, cp, handoff)
    assert cp.commands == [("kubeadm token create --ttl 1h --print-join-command", True)]

    worker = host_for(lab.workers[1])
    join_node(None, worker, lab, handoff)
    config = yaml.safe_load(worker.files[f.KUBEADM_JOIN_CONFIG])
    assert config["discovery"]["bootstrapToken"]["token"] == "k9x2ab.0123456789abcdef"
    assert config["discovery"]["bootstrapToken"]["caCertHashes"] == [HASH]
    assert config["nodeRegistration"]["name"] == "k8s-worker-02"
    commands = [c for c, _ in worker.commands]
    assert commands[1] == f"chmod 600 {f.KUBEADM_JOIN_CONFIG} && kubeadm join --config {f.KUBEADM_JOIN_CONFIG}"
    assert commands[-1] == f"rm -f {f.KUBEADM_JOIN_CONFIG}"  # the file held a live token
    assert handoff.joined == ["k8s-worker-02"]


def test_a_failed_join_is_recorded_with_its_output_and_the_token_file_removed():
    lab = make_lab()
    handoff = JoinHandoff()
    mint_join_token(None, host_for(lab.control_plane, kubeadm=(True, JOIN_LINE)), handoff)
    worker = host_for(lab.workers[0], **{"chmod 600": (False, "[preflight] port 10250 is in use")})
    with pytest.raises(JoinError):
        join_node(None, worker, lab, handoff)
    assert "kubeadm join failed" in handoff.errors["k8s-worker-01"]
    assert "port 10250 is in use" in handoff.errors["k8s-worker-01"]
    assert worker.commands[-1][0] == f"rm -f {f.KUBEADM_JOIN_CONFIG}"


def test_a_worker_without_a_token_says_where_minting_failed():
    lab = make_lab()
    handoff = JoinHandoff()
    with pytest.raises(JoinError):
        mint_join_token(None, host_for(lab.control_plane, kubeadm=(False, "")), handoff)
    with pytest.raises(JoinError, match="no join token: minting one on k8s-control-plane failed"):
        join_node(None, host_for(lab.workers[0]), lab, handoff)


def test_a_worker_that_joined_meanwhile_is_left_alone():
    lab = make_lab()
    worker = host_for(lab.workers[0])
    worker.files[f.KUBELET_CONF] = "joined"
    join_node(None, worker, lab, JoinHandoff())
    assert worker.commands == []


def test_parse_join_command_rejects_other_output():
    creds = parse_join_command(JOIN_LINE)
    assert (creds.endpoint, creds.token, creds.ca_cert_hash) == ("192.168.56.10:6443", "k9x2ab.0123456789abcdef", HASH)
    with pytest.raises(JoinError, match="printed no join command"):
        parse_join_command("error: timed out waiting for the condition")
