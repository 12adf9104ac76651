"""Files from real releases, kept beside the checkout in ../shared/reference/ (its README says where each
comes from). Tests read them there at test time and never copy them into the repository; without the
folder a test skips with the reason, and fails under CI=true."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from labkit.paths import PROJECT_ROOT
from tests.unavailable import skip_or_fail

REFERENCE_DIR = PROJECT_ROOT.parent / "shared" / "reference"
CALICO_RELEASES = ("v3.30.3", "v3.32.1")  # oldest first: the upgrade path the tests follow


def calico_manifests(version: str) -> Path:
    """The release's manifests folder (operator-crds.yaml, tigera-operator.yaml, custom-resources.yaml)."""
    folder = REFERENCE_DIR / f"calico-{version}"
    if not folder.is_dir():
        skip_or_fail(f"the real Calico {version} release files are not in {folder} (see the project's README)")
    return folder


@cache  # 3 MB of YAML per release: parse it once per session
def calico_crds(version: str) -> dict[str, dict]:
    """CRD name -> the CustomResourceDefinition, from the release's operator-crds.yaml (do not modify)."""
    text = (calico_manifests(version) / "operator-crds.yaml").read_text()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return {d["metadata"]["name"]: d for d in yaml.load_all(text, Loader=loader) if d}


KUBE_APISERVER = "kube-apiserver-v1.36.2"


def kube_apiserver_recording(name: str) -> Path:
    """A file of real kube-apiserver traffic (../shared/reference/kube-apiserver-v1.36.2/, its README says what
    each holds)."""
    path = REFERENCE_DIR / KUBE_APISERVER / name
    if not path.is_file():
        skip_or_fail(f"the recorded kube-apiserver traffic {path} is not there (see the project's README)")
    return path
