"""The lab's own scheduler plugins on the host (labkit.lab_plugins): loaded from scheduler.plugins as the
scheduler loads them, scheduler.profile validated against them, every problem named by its field; doctor
and deploy-scheduler (--render-only too) refuse before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit import doctor, lab_plugins
from labkit.lab_plugins import PluginFolderError, ProfileError
from labkit.scheduler_deploy.verb import run_verb
from tests import user_plugin


def user_lab(tmp_path: Path, profile: dict | None = None, plugins: list[str] | None = None) -> Lab:
    """The default lab beside a user's plugin folder (relative path), its profile enabling DiskType."""
    user_plugin.write_plugin(tmp_path / "my_plugins" / "disk_type")
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["plugins"] = plugins if plugins is not None else ["my_plugins/disk_type"]
    data["scheduler"]["profile"] = profile if profile is not None else user_plugin.profile()
    data["placement"] = {}
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(data))
    return load_lab(lab_file)


def test_the_labs_plugin_folder_is_loaded_and_its_profile_validated(tmp_path: Path) -> None:
    lab = user_lab(tmp_path)
    plugins = lab_plugins.checked_registry(lab)
    assert user_plugin.NAME in plugins
    assert plugins.source_of(user_plugin.NAME) == str(tmp_path / "my_plugins" / "disk_type")
    config = lab_plugins.validate_profile(lab, plugins)
    assert config.profiles[0].schedulerName == lab.scheduler.name


@pytest.mark.parametrize(("profile", "field"), [
    ({"plugins": {"multiPoint": {"enabled": [{"name": "DiskTipe"}]}}},
     "scheduler.profile.plugins.multiPoint.enabled[0]: unknown plugin 'DiskTipe'"),
    ({"pluginConfig": [{"name": "DiskType", "args": {"labelKey": 7}}]},
     "scheduler.profile.pluginConfig[0].args.labelKey:"),
    ({"pluginConfig": [{"name": "DiskType", "args": {"colour": "red"}}]},
     "scheduler.profile.pluginConfig[0].args.colour: unknown field"),
    # how many plugins a point takes, which the scheduler would otherwise refuse only once deployed
    ({"plugins": {"queueSort": {"disabled": [{"name": "PrioritySort"}]}}},
     ("scheduler.profile.plugins.queueSort: one queue sort plugin required for profile my-custom-scheduler, "
      "found 0 (none): enable one")),
    ({"plugins": {"bind": {"disabled": [{"name": "DefaultBinder"}]}}},
     "scheduler.profile.plugins.bind: at least one bind plugin is needed"),
])
def test_a_profile_the_plugins_refuse_is_named_by_its_field(tmp_path: Path, profile: dict, field: str) -> None:
    lab = user_lab(tmp_path, profile=profile)
    with pytest.raises(ProfileError) as err:
        lab_plugins.checked_registry(lab)
    assert field in str(err.value), str(err.value)


def test_an_unknown_plugin_lists_the_registered_ones(tmp_path: Path) -> None:
    lab = user_lab(tmp_path, profile={"plugins": {"multiPoint": {"enabled": [{"name": "Nope"}]}}})
    with pytest.raises(ProfileError, match="DiskType; add its folder or module to scheduler.plugins"):
        lab_plugins.checked_registry(lab)


def test_a_broken_plugin_is_named_by_its_scheduler_plugins_entry(tmp_path: Path) -> None:
    lab = user_lab(tmp_path)
    (tmp_path / "my_plugins" / "disk_type" / "labels.py").write_text("def wanted(pod, key)\n")  # a syntax error
    with pytest.raises(PluginFolderError, match=r"^scheduler.plugins\[0\]: .*disk_type: import error"):
        lab_plugins.registry(lab)
    missing = user_lab(tmp_path, plugins=["not_installed_anywhere.plugins"])
    with pytest.raises(PluginFolderError, match=r"^scheduler.plugins\[0\]: not_installed_anywhere.plugins: not found"):
        lab_plugins.registry(missing)


def test_a_fixed_plugin_is_read_afresh(tmp_path: Path) -> None:
    """deploy-scheduler --watch validates every round in one process: an edit counts at the next round."""
    lab = user_lab(tmp_path, profile={"pluginConfig": [{"name": "DiskType", "args": {"minimum": 2}}]})
    with pytest.raises(ProfileError, match="args.minimum: unknown field"):
        lab_plugins.checked_registry(lab)
    init = tmp_path / "my_plugins" / "disk_type" / "__init__.py"
    init.write_text(init.read_text().replace('labelKey: str = "example.com/disk"',
                                             'labelKey: str = "example.com/disk"\n    minimum: int = 1'))
    assert user_plugin.NAME in lab_plugins.checked_registry(lab)


def test_doctor_checks_the_labs_plugins(tmp_path: Path) -> None:
    [ok] = doctor.check_scheduler_plugins(user_lab(tmp_path))
    assert ok.verdict == doctor.OK and ok.detail == "1 of the lab's loaded (DiskType); scheduler.profile fits them"
    bad = user_lab(tmp_path, profile={"pluginConfig": [{"name": "DiskType", "args": {"labelKey": 7}}]})
    [fail] = doctor.check_scheduler_plugins(bad)
    assert fail.verdict == doctor.FAIL and "scheduler.profile.pluginConfig[0].args.labelKey" in fail.detail


def test_render_only_refuses_a_profile_the_plugins_refuse_and_writes_nothing(tmp_path: Path) -> None:
    bad = user_lab(tmp_path, profile={"plugins": {"multiPoint": {"enabled": [{"name": "DiskTipe"}]}}})
    out = tmp_path / "rendered"
    with pytest.raises(ProfileError, match="unknown plugin 'DiskTipe'"):
        run_verb(bad, tmp_path / "lab.yaml", render_only=out, echo=lambda _line: None)
    assert not out.exists()


def test_deploy_refuses_before_building_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labkit.scheduler_deploy import verb

    monkeypatch.setattr(verb, "lab_hosts", lambda *args: pytest.fail("the inventory was read"))
    monkeypatch.setattr(verb, "deploy_scheduler", lambda *args: pytest.fail("something was deployed"))
    bad = user_lab(tmp_path, profile={"pluginConfig": [{"name": "DiskType", "args": {"labelKey": 7}}]})
    with pytest.raises(ProfileError, match="scheduler.profile.pluginConfig"):
        run_verb(bad, tmp_path / "lab.yaml", tmp_path / "kubeconfig", echo=lambda _line: None)


def test_render_only_ships_the_user_folder(tmp_path: Path) -> None:
    lab = user_lab(tmp_path)
    out = tmp_path / "rendered"
    run_verb(lab, tmp_path / "lab.yaml", render_only=out, echo=lambda _line: None)
    deployment = yaml.safe_load(max(out.glob("*deployment*")).read_text())
    assert "--plugins=/opt/kubelab/plugins/disk_type" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert lab_plugins.folders(lab) == [tmp_path / "my_plugins" / "disk_type"]
    assert lab_plugins.host_sources(lab) == [str(tmp_path / "my_plugins" / "disk_type")]
