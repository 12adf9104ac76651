"""Which platform deploy-scheduler builds the image for: the one the nodes' `uname -m` names
(labkit.scheduler_deploy.image_delivery.platform_for). The system suite asks real machines
(tests/system/test_scheduler_sideload.py)."""

from __future__ import annotations

import pytest

from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.image_delivery import platform_for


@pytest.mark.parametrize(("machines", "platform"), [
    ({"cp": "x86_64", "w1": "x86_64\n"}, "linux/amd64"),
    ({"cp": "aarch64", "w1": "aarch64"}, "linux/arm64"),   # VirtualBox 7.1+ on an Apple silicon Mac
    ({"cp": "arm64"}, "linux/arm64"),                      # what BSD-style unames answer
])
def test_the_nodes_architecture_decides_the_platform(machines, platform) -> None:
    assert platform_for(machines) == platform


def test_nodes_of_two_architectures_are_refused_by_name() -> None:
    with pytest.raises(DeployError, match=r"differ in architecture \(linux/amd64: cp, w2; linux/arm64: w1\)"):
        platform_for({"cp": "x86_64", "w1": "aarch64", "w2": "x86_64"})


def test_an_architecture_without_an_image_platform_names_the_node() -> None:
    with pytest.raises(DeployError, match=r"w1: machine architecture 'riscv64'"):
        platform_for({"cp": "x86_64", "w1": "riscv64"})
    with pytest.raises(DeployError, match=r"cp: machine architecture None"):
        platform_for({"cp": None})
