"""containerd's config: its own defaults with SystemdCgroup on and CRI enabled, in both layouts."""

from __future__ import annotations

import difflib
import tomllib

import pytest

from deploys.containerd_config import ContainerdConfigError, kubernetes_config, runc_options, sandbox_image
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


PAUSE = "registry.k8s.io/pause:3.10.2"
V3_CRI_DEFAULTS = (RECORDED / "containerd-2.2.0-cri-config.toml").read_text()


def test_version_2_gets_kubeadms_pause_image_as_sandbox_image():
    """Input: Debian 12's containerd 1.6.20 defaults (sandbox_image pause:3.6)."""
    result = kubernetes_config(CONTAINERD_DEFAULT, PAUSE)
    assert sandbox_image(tomllib.loads(result)) == PAUSE
    assert changed_lines(CONTAINERD_DEFAULT, result) == [
        '-     sandbox_image = "registry.k8s.io/pause:3.6"', f'+     sandbox_image = "{PAUSE}"',
        "-             SystemdCgroup = false", "+             SystemdCgroup = true"]


def test_version_3_pins_kubeadms_pause_image_as_the_sandbox():
    """Input: containerd 2.2.0's documented CRI defaults (pinned_images.sandbox pause:3.10.1)."""
    result = kubernetes_config(V3_CRI_DEFAULTS, PAUSE)
    parsed = tomllib.loads(result)
    assert parsed["plugins"]["io.containerd.cri.v1.images"]["pinned_images"] == {"sandbox": PAUSE}
    assert runc_options(parsed)["SystemdCgroup"] is True
    assert changed_lines(V3_CRI_DEFAULTS, result) == [
        "-       sandbox = 'registry.k8s.io/pause:3.10.1'", f'+       sandbox = "{PAUSE}"',
        "+             SystemdCgroup = true"]
    assert kubernetes_config(result, PAUSE) == result


def test_a_missing_sandbox_key_is_added_under_its_table():
    without = CONTAINERD_DEFAULT.replace('    sandbox_image = "registry.k8s.io/pause:3.6"\n', "")
    assert sandbox_image(tomllib.loads(kubernetes_config(without, PAUSE))) == PAUSE


def test_no_known_pause_image_keeps_containerds_own():
    assert sandbox_image(tomllib.loads(kubernetes_config(V3_CRI_DEFAULTS, None))) == "registry.k8s.io/pause:3.10.1"


def test_a_version_3_config_without_pinned_images_is_refused():
    with pytest.raises(ContainerdConfigError, match=r"no \[plugins.'io.containerd.cri.v1.images'.pinned_images\]"):
        kubernetes_config(V3_LAYOUT, PAUSE)
