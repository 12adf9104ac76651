"""containerd's config: its own defaults with SystemdCgroup on and CRI enabled, in both layouts."""

from __future__ import annotations

import difflib
import tomllib

import pytest

from deploys.containerd_config import ContainerdConfigError, kubernetes_config, runc_options
from tests.deploys.recorded_facts import CONTAINERD_DEFAULT, RECORDED

V3_LAYOUT = (RECORDED / "containerd-2.x-layout-abridged.toml").read_text()


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "+-"]


def test_containerd_1_6_defaults_get_systemd_cgroup_and_nothing_else():
    """Input: real `containerd config default` output of Debian 12's containerd 1.6.20."""
    result = kubernetes_config(CONTAINERD_DEFAULT)
    parsed = tomllib.loads(result)
    assert parsed["version"] == 2
    assert runc_options(parsed)["SystemdCgroup"] is True
    assert "cri" not in parsed["disabled_plugins"]
    assert changed_lines(CONTAINERD_DEFAULT, result) == [
        "-             SystemdCgroup = false", "+             SystemdCgroup = true"]


def test_containerd_2_layout_gets_the_line_inserted_in_the_runc_options():
    result = kubernetes_config(V3_LAYOUT)
    parsed = tomllib.loads(result)
    options = parsed["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]["options"]
    assert options == {"BinaryName": "", "NoNewKeyring": False, "ShimCgroup": "", "SystemdCgroup": True}


def test_a_packaged_config_with_cri_disabled_is_fixed():
    packaged = CONTAINERD_DEFAULT.replace("disabled_plugins = []", 'disabled_plugins = ["cri", "zfs"]')
    parsed = tomllib.loads(kubernetes_config(packaged))
    assert parsed["disabled_plugins"] == ["zfs"]


def test_rewriting_is_stable():
    once = kubernetes_config(CONTAINERD_DEFAULT)
    assert kubernetes_config(once) == once
    assert kubernetes_config(kubernetes_config(V3_LAYOUT)) == kubernetes_config(V3_LAYOUT)


def test_unknown_layout_is_refused_with_the_fix():
    with pytest.raises(ContainerdConfigError, match="containerd.package/version"):
        kubernetes_config('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n')
