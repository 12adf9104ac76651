"""Extender mode refuses a profile whose plugins need points kube-scheduler's extender protocol never calls
(Reserve, Permit, ...): doctor fails the check and deploy-scheduler (--render-only too) stops before anything is
written or built, naming the plugin, its point and the way out (standalone mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit import doctor, lab_plugins
from labkit.lab_plugins import ExtenderModeError
from labkit.scheduler_deploy.verb import run_verb

# A Permit plugin (it holds every pod until allowed; the body does not matter here) and a plain filter.
SOURCE = '''"""Hold: a Permit plugin, and Gate: a filter."""
from scheduler.framework import Plugin, PermitResult


class HoldSetup:
    def __init__(self, args, handle):
        self.handle = handle

    def permit(self, cycle, pod, node):
        return PermitResult()  # bind at once


def pre_filter(pod, args):
    return None


def filter_node(state, node):
    return None


PLUGINS = [Plugin("Hold", setup=HoldSetup), Plugin("Gate", pre_filter=pre_filter, filter_node=filter_node)]
'''


def lab_with(tmp_path: Path, enabled: list[str], mode: str) -> Lab:
    folder = tmp_path / "my_plugins" / "hold"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(SOURCE)
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"].update(plugins=["my_plugins/hold"], mode=mode,
                             profile={"plugins": {"multiPoint": {"enabled": [{"name": n} for n in enabled]}}})
    data["placement"] = {}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(data))
    return load_lab(tmp_path / "lab.yaml")


def test_a_permit_plugin_is_refused_in_extender_mode_with_the_way_out(tmp_path: Path) -> None:
    lab = lab_with(tmp_path, ["Hold", "Gate"], "extender")
    with pytest.raises(ExtenderModeError) as err:
        lab_plugins.checked_registry(lab)
    text = str(err.value)
    assert text.startswith("scheduler.mode is extender, but scheduler.profile needs extension points an extender "
                           "is never called at:")
    assert f"profile {lab.scheduler.name}: plugin Hold runs at Permit" in text
    assert "run the scheduler standalone (scheduler.mode: standalone in the lab definition)" in text
    assert "Gate" not in text  # a filter is what an extender is asked about


def test_the_same_profile_is_fine_standalone_and_a_filter_is_fine_in_extender_mode(tmp_path: Path) -> None:
    assert "Hold" in lab_plugins.checked_registry(lab_with(tmp_path, ["Hold", "Gate"], "standalone"))
    assert "Gate" in lab_plugins.checked_registry(lab_with(tmp_path, ["Gate"], "extender"))


def test_doctor_fails_the_check_naming_the_plugin(tmp_path: Path) -> None:
    [check] = doctor.check_scheduler_plugins(lab_with(tmp_path, ["Hold"], "extender"))
    assert check.verdict == doctor.FAIL
    assert "plugin Hold runs at Permit" in check.detail and "scheduler.mode: standalone" in check.detail


def test_deploy_scheduler_refuses_before_writing_or_building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labkit.scheduler_deploy import verb

    lab = lab_with(tmp_path, ["Hold"], "extender")
    out = tmp_path / "rendered"
    with pytest.raises(ExtenderModeError, match="plugin Hold runs at Permit"):
        run_verb(lab, tmp_path / "lab.yaml", render_only=out, echo=lambda _line: None)
    assert not out.exists()
    monkeypatch.setattr(verb, "lab_hosts", lambda *args: pytest.fail("the inventory was read"))
    monkeypatch.setattr(verb, "deploy_scheduler", lambda *args: pytest.fail("something was deployed"))
    with pytest.raises(ExtenderModeError, match="plugin Hold runs at Permit"):
        run_verb(lab, tmp_path / "lab.yaml", tmp_path / "kubeconfig", echo=lambda _line: None)
