"""What the upstream projects support together, as their own documents said when last checked (CHECKED_ON).

Pure data and comparisons: the lab definition refuses a pairing these tables rule out, and warns about a
version they do not cover (newer than the project knows, or out of upstream support). Update a table
from its source when a new release appears; the comment above each one names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

# The day these tables were last checked against their sources. "Ended" below means ended by this day: the
# verdicts never depend on the clock of the machine that runs them.
CHECKED_ON = date(2026, 11, 27)


@dataclass(frozen=True)
class KubernetesRelease:
    newest_patch: str  # the newest patch release the source listed
    end_of_life: date  # upstream's last patch for the minor


# Upstream patches the three newest minors for about 14 months (kubernetes.io/releases/1.NN, "Latest patch
# release" and "End Of Life Date"; 1.34 reached its end of life on 2026-10-27, 1.38 is due mid-December 2026).
# The newest patches are those the stored copies of those pages listed: 1.37.1 and 1.35.9 (2026-09-15; 1.37.2
# was planned for 2026-10-13) and 1.36.4 (2026-08-11; 1.36.5 was planned for 2026-09-15). The monthly patches
# since could not be confirmed offline.
KUBERNETES_RELEASES = {
    35: KubernetesRelease("1.35.9", date(2027, 2, 28)),
    36: KubernetesRelease("1.36.4", date(2027, 6, 28)),
    37: KubernetesRelease("1.37.1", date(2027, 10, 28)),  # released 2026-08-26
}
SUPPORTED_KUBERNETES_MINORS = tuple(
    minor for minor, known in sorted(KUBERNETES_RELEASES.items()) if known.end_of_life > CHECKED_ON)


@dataclass(frozen=True)
class KubernetesMinor:
    # containerd releases recommended for this minor, one floor per containerd minor line ("2.2.0" = 2.2.0+).
    containerd_floors: tuple[str, ...]
    # kubeadm's PauseVersion: the sandbox image `kubeadm init` expects the runtime to use.
    pause: str


# containerd_floors: containerd/containerd RELEASES.md, "Kubernetes Support" (main, August 2026).
# pause: kubeadm's constants.PauseVersion as `kubeadm config images list` prints it per release
# (kubernetes/minikube pkg/minikube/constants/constants_kubeadm_images.go, generated from kubeadm).
# 1.37 is not here: the newest copy of RELEASES.md at hand (main, 2026-08-22, days before 1.37's release) has
# no 1.37 row, and kubeadm 1.37's PauseVersion could not be confirmed offline. A 1.37 lab therefore gets a
# warning that its containerd floor is not checked and containerd keeps its own sandbox image.
KUBERNETES = {
    32: KubernetesMinor(("2.1.0", "2.0.1", "1.7.24", "1.6.36"), "3.10"),
    33: KubernetesMinor(("2.1.0", "2.0.4", "1.7.24", "1.6.36"), "3.10"),
    34: KubernetesMinor(("2.1.3", "2.0.6", "1.7.28", "1.6.39"), "3.10.1"),
    35: KubernetesMinor(("2.2.0", "2.1.5", "1.7.28"), "3.10.1"),
    36: KubernetesMinor(("2.3.0", "2.2.0"), "3.10.2"),
}

# kubeadm.k8s.io/v1beta4 arrived in 1.31 (kubernetes/kubernetes#125029); v1beta3 was removed in 1.37
# (CHANGELOG-1.37.md, v1.37.0-alpha.1, "Kubeadm: removed the v1beta3 API which was deprecated since v1.31",
# kubernetes/kubernetes#136016: "the 1.35 kubeadm binary can be used to migrate to v1beta4").
KUBEADM_V1BETA4_SINCE = 31

# The Kubernetes minors each Calico minor is tested against: tigera/docs
# calico_versioned_docs/version-3.NN/_includes/partials/_system-requirements.mdx, "Supported versions".
# From v3.33 Calico's docs install the CRDs from v1_crd_projectcalico_org.yaml; operator-crds.yaml, which
# deploys/cni.py applies, is kept as a byte-identical legacy alias (tigera/docs#2558, #2882).
CALICO = {
    29: (29, 32),
    30: (31, 35),
    31: (32, 35),
    32: (34, 36),
    33: (35, 37),
}

# Upstream end of life per containerd minor line: containerd/containerd RELEASES.md, "Support Horizon" (main,
# 2026-08-22). Where it gives only a month (1.7: "September 2026", 2.0: "March, 2027", both extended support
# by two maintainers for GKE's Kubernetes minors), the month's last day. Distributions patch their own packages
# past these dates (Ubuntu backports and patches containerd-app in its LTS releases: its SRU "Container Stack
# Updates" exception), so only a pinned upstream build (the containerd.io package) is warned about.
CONTAINERD_END_OF_LIFE = {
    (1, 6): date(2025, 8, 23),
    (1, 7): date(2026, 9, 30),
    (2, 0): date(2027, 3, 31),
    (2, 1): date(2026, 7, 3),
    (2, 2): date(2026, 11, 6),
    (2, 3): date(2028, 4, 30),  # the LTS line
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


def containerd_line_ended(version: str) -> date | None:
    """The end-of-life date of this containerd's upstream minor line if it had passed by CHECKED_ON."""
    have = release(version)
    ended = CONTAINERD_END_OF_LIFE.get(have[:2]) if have else None
    return ended if ended is not None and ended <= CHECKED_ON else None


def calico_minor(tag: str) -> int:
    return int(tag.lstrip("v").split(".")[1])
