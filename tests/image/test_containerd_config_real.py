"""The node's containerd config (deploys.containerd_config) made from, and run by, real containerd builds.

The deploy writes `containerd config default` of the installed containerd with three changes (SystemdCgroup,
CRI enabled, kubeadm's pause image as the sandbox image). The fast suite checks that rewrite on recorded
defaults; here the input is the real output of this host's containerd 1.6.20 (config version 2) and of
Debian testing's containerd 2.1.9 (version 3, unpacked by scripts/install-test-deps.sh), and the result is
run by that same containerd with its CRI plugin enabled. Real: containerd's parsing of the file, its plugin
loading, and the runc options its CRI runtime reports at start. Not modelled: the kubelet, CNI, pulling the
pause image (no registry here); the sandbox image is read back from `containerd config dump` (containerd's
merged view of the file, which also keeps keys containerd does not use: where it lives is fixed by
containerd's docs/cri/config.md, not proven here).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from deploys.containerd_config import kubernetes_config, runc_options, sandbox_image
from deploys.files import sandbox_image as kubeadm_pause_image
from labdef.lab import load_lab
from tests.image.base import containerd2_bin, private_containerd, run

pytestmark = pytest.mark.image

# containerd's CRI plugin logs the config it parsed when it starts: 1.6 as Go's %+v
# ("Options:map[... SystemdCgroup:true]"), 2.x as escaped JSON ("\"options\":{... \"SystemdCgroup\":true}").
# Only the runc options' key: 1.6 also logs the unrelated legacy top-level SystemdCgroup (shim v1), false.
RUNC_SYSTEMD_CGROUP = re.compile(r'[Oo]ptions\\?"?:(?:map\[|\{)[^\]}]*?SystemdCgroup\\?"?:(true|false)')
# 1.6 logs the sandbox image it parsed too (2.x does not).
SANDBOX_IN_LOG = {"1.6": "SandboxImage:{pause} ", "2.x": None}


@pytest.fixture(params=["1.6", "2.x"], ids=["1.6 (host)", "2.x (Debian testing)"])
def build(request, image_tools) -> tuple[str, Path | None]:
    return request.param, (containerd2_bin() if request.param == "2.x" else None)


def containerd_binary(bin_dir: Path | None) -> str:
    return str(bin_dir / "containerd") if bin_dir else "containerd"


def test_containerd_runs_the_config_the_deploy_writes_with_cri_on_systemd_cgroups(build, tmp_path) -> None:
    line, bin_dir = build
    pause = kubeadm_pause_image(load_lab())
    assert pause  # the default lab's Kubernetes minor is one labdef.versions knows
    defaults = run([containerd_binary(bin_dir), "config", "default"])
    assert runc_options(tomllib.loads(defaults)).get("SystemdCgroup") is not True  # there is something to change
    config = kubernetes_config(defaults, pause)

    with private_containerd(tmp_path, bin_dir, config) as containerd:
        print(f"\ncontainerd {containerd.version}, config version {tomllib.loads(config)['version']}")
        plugins = containerd.ctr("plugins", "ls")
        log = (tmp_path / "containerd.log").read_text()
    cri = [line.split() for line in plugins.splitlines() if re.search(r"\bcri\b|io\.containerd\.cri\.", line)]
    assert cri and all(fields[-1] == "ok" for fields in cri), plugins
    assert RUNC_SYSTEMD_CGROUP.findall(log) == ["true"], log[-3000:]
    if SANDBOX_IN_LOG[line]:
        assert SANDBOX_IN_LOG[line].format(pause=pause) in log, log[-3000:]

    dumped = tomllib.loads(run([containerd_binary(bin_dir), "--config", str(tmp_path / "containerd.toml"),
                                "config", "dump"]))
    assert sandbox_image(dumped) == pause
    assert runc_options(dumped)["SystemdCgroup"] is True
