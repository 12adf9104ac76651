"""The lab definition fields provisioning added: package source, key, revision, containerd pin, Calico manifests URL."""

from __future__ import annotations

import pytest

from labdef.lab import LabError
from tests.deploys.labs import make_lab


@pytest.mark.parametrize("section,values,field", [
    ("kubernetes", {"package_source": "ftp://mirror/k8s/"}, "kubernetes.package_source"),
    ("kubernetes", {"package_source": "https://mirror.example/k8s"}, "kubernetes.package_source"),
    ("kubernetes", {"package_key_url": "/srv/key.asc"}, "kubernetes.package_key_url"),
    ("kubernetes", {"package_revision": "1.1; rm -rf /"}, "kubernetes.package_revision"),
    ("containerd", {"version": "latest please"}, "containerd.version"),
    ("containerd", {"package": "Containerd IO"}, "containerd.package"),
    ("cni", {"manifests_url": "raw.githubusercontent.com/x/manifests"}, "cni.manifests_url"),
    ("cni", {"manifests_url": "https://mirror.example/calico/manifests"}, "cni.manifests_url"),
    ("cni", {"operator_manifest_url": "https://mirror.example/calico/v3.30.3/tigera-operator.yaml"}, "cni"),
])
def test_bad_values_are_refused_naming_the_field(section, values, field):
    with pytest.raises(LabError) as err:
        make_lab(**{section: values})
    assert f"{field}:" in str(err.value)


def test_defaults():
    lab = make_lab()
    assert lab.kubernetes.package_version == "1.36.4-1.1"
    assert lab.containerd.package == "containerd" and lab.containerd.version is None
    assert lab.cni.manifest_url("operator-crds.yaml") == \
        "https://raw.githubusercontent.com/projectcalico/calico/v3.32.1/manifests/operator-crds.yaml"
    assert make_lab(kubernetes={"package_key_url": "http://10.0.3.1:8080/key.asc"}).kubernetes.key_url == \
        "http://10.0.3.1:8080/key.asc"
