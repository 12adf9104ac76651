"""What the upstream projects support together, as their own documents said in November 2026.

Pure data and comparisons: the lab definition refuses a pairing these tables rule out, and warns about a
version they do not cover (newer than the project knows, or out of upstream support). Update a table
from its source when a new release appears; the comment above each one names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Upstream patches the three newest minors (kubernetes.io/releases: 1.37, 1.36 and 1.35 in November 2026;
# 1.34 reached its end of life on 2026-10-27).
SUPPORTED_KUBERNETES_MINORS = (35, 36, 37)


@dataclass(frozen=True)
class KubernetesMinor:
    # containerd releases recommended for this minor, one floor per containerd minor line ("2.2.0" = 2.2.0+).
    containerd_floors: tuple[str, ...]
    # kubeadm's PauseVersion: the sandbox image `kubeadm init` expects the runtime to use.
    pause: str


# containerd_floors: containerd/containerd RELEASES.md, "Kubernetes Support" (main, August 2026).
# pause: kubeadm's constants.PauseVersion as `kubeadm config images list` prints it per release
# (kubernetes/minikube pkg/minikube/constants/constants_kubeadm_images.go, generated from kubeadm).
KUBERNETES = {
    32: KubernetesMinor(("2.1.0", "2.0.1", "1.7.24", "1.6.36"), "3.10"),
    33: KubernetesMinor(("2.1.0", "2.0.4", "1.7.24", "1.6.36"), "3.10"),
    34: KubernetesMinor(("2.1.3", "2.0.6", "1.7.28", "1.6.39"), "3.10.1"),
    35: KubernetesMinor(("2.2.0", "2.1.5", "1.7.28"), "3.10.1"),
    36: KubernetesMinor(("2.3.0", "2.2.0"), "3.10.2"),
}

# kubeadm.k8s.io/v1beta4 arrived in 1.31 (kubernetes/kubernetes#125029); v1beta3 was removed in 1.36
# (kubernetes/kubernetes#136016: "the 1.35 kubeadm binary can be used to migrate to v1beta4").
KUBEADM_V1BETA4_SINCE = 31

# The Kubernetes minors each Calico minor is tested against: tigera/docs
# calico_versioned_docs/version-3.NN/_includes/partials/_system-requirements.mdx, "Supported versions".
CALICO = {
    29: (29, 32),
    30: (31, 35),
    31: (32, 35),
    32: (34, 36),
}

PAUSE_REPOSITORY = "registry.k8s.io/pause"  # kubeadm's default imageRepository
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def release(version: str) -> tuple[int, int, int] | None:
    """(2, 2, 1) for 2.2.1, v2.2.1, or a Debian package version built from it (2.2.1-0ubuntu1~24.04.1,
    1:1.7.28-1, 1.6.20~ds1-1+b1): the epoch goes, the upstream release stays."""
    match = _RELEASE.match(version.split(":", 1)[-1])  # "1:2.2.1-1": the epoch is no part of the release
    return tuple(int(part) for part in match.groups()) if match else None


def kubeadm_api(minor: int) -> str:
    return "v1beta4" if minor >= KUBEADM_V1BETA4_SINCE else "v1beta3"


def pause_image(minor: int) -> str | None:
    known = KUBERNETES.get(minor)
    return f"{PAUSE_REPOSITORY}:{known.pause}" if known else None


def containerd_floors(minor: int) -> str:
    """'2.3.0+ or 2.2.0+' for 1.36, as RELEASES.md writes it."""
    return " or ".join(f"{floor}+" for floor in KUBERNETES[minor].containerd_floors)


def containerd_verdict(minor: int, version: str) -> str:
    """'ok', 'below' (under the floor of its line, or a line RELEASES.md no longer lists for this minor),
    'newer' (a line newer than any listed) or 'unknown' (a minor or version this module cannot judge)."""
    have = release(version)
    if minor not in KUBERNETES or have is None:
        return "unknown"
    floors = [release(floor) for floor in KUBERNETES[minor].containerd_floors]
    for floor in floors:
        if have[:2] == floor[:2]:
            return "ok" if have >= floor else "below"
    return "newer" if have[:2] > max(floors)[:2] else "below"


def calico_minor(tag: str) -> int:
    return int(tag.lstrip("v").split(".")[1])
