"""Tools the suites run from Debian testing: unpacked by scripts/install-test-deps.sh into
/opt/kubelab-test/<package>/usr/bin, never installed on the host (containerd 2.x beside the host's 1.6;
kubectl of the lab's Kubernetes minor rather than whatever kubectl the host has)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tests.unavailable import skip_or_fail

TOOLS_DIR = Path(os.environ.get("KUBELAB_TESTING_TOOLS_DIR", "/opt/kubelab-test"))


def debian_testing_bin(package: str) -> Path:
    """The folder of ``package``'s binaries, or skip (fail under CI) without it."""
    folder = TOOLS_DIR / package / "usr" / "bin"
    if not (folder / package).is_file():
        skip_or_fail(f"no {package} from Debian testing in {folder}")
    return folder


def debian_testing_kubectl() -> str:
    """kubectl of the lab's Kubernetes minor, from Debian testing."""
    return str(debian_testing_bin("kubectl") / "kubectl")


def closed_port() -> int:
    """A loopback port where nothing listens (kubectl's "connection ... refused")."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
