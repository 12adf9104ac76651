"""`--feature-gates` on both of the scheduler's commands: refused at start when kube-scheduler would refuse it
(exit 2, the gate named, nothing contacted), and the gang gates adding GangScheduling to the standalone default
profile only (an extender's kube-scheduler runs it itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler import cli

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: my-scheduler
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize("command", [[], ["extender"]], ids=["standalone", "extender"])
@pytest.mark.parametrize(("gates", "named"), [
    ("GangSchedulng=true", "GangSchedulng"),
    ("GenericWorkload=maybe", "GenericWorkload"),
    ("GangScheduling=true", "GenericWorkload"),  # GangScheduling needs GenericWorkload, as kube-scheduler says
])
def test_a_gate_kube_scheduler_refuses_stops_the_start(command, gates, named, config, capsys):
    code = cli.main([*command, "--config", str(config), "--feature-gates", gates,
                     "--kubeconfig", "/nonexistent/kubeconfig"])
    err = capsys.readouterr().err
    assert code == 2
    assert named in err and "kubeconfig" not in err  # refused before anything else is looked at


def test_gang_gates_add_gang_scheduling_to_the_standalone_default_profile_only(config):
    gates = ["--feature-gates", "GenericWorkload=true,GangScheduling=true"]
    standalone = cli.parse_args(["--config", str(config), *gates])
    extender = cli.parse_extender_args(["--config", str(config), *gates])
    assert cli._registry(standalone).defaults[-1] == ("GangScheduling", 0)
    assert "GangScheduling" not in dict(cli._registry(extender, extender=True).defaults)
    assert "GangScheduling" not in dict(cli._registry(cli.parse_args(["--config", str(config)])).defaults)
