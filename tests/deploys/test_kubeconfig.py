"""The host's kubeconfig: admin.conf renamed after the lab, credentials and server untouched."""

from __future__ import annotations

import pytest
import yaml

from deploys.kubeconfig import AdminConfError, lab_kubeconfig

ADMIN_CONF = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0EK
    server: https://192.168.56.10:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
kind: Config
preferences: {}
users:
- name: kubernetes-admin
  user:
    client-certificate-data: Q0VSVAo=
    client-key-data: S0VZCg==
"""


def test_names_follow_the_lab_and_credentials_are_kept():
    config = yaml.safe_load(lab_kubeconfig(ADMIN_CONF, "schedlab"))
    assert config["current-context"] == "schedlab"
    assert config["contexts"] == [{"name": "schedlab", "context": {"cluster": "schedlab", "user": "schedlab-admin"}}]
    assert config["clusters"][0]["cluster"]["server"] == "https://192.168.56.10:6443"
    assert config["users"][0]["user"]["client-key-data"] == "S0VZCg=="


def test_garbage_is_refused():
    with pytest.raises(AdminConfError, match="not a kubeconfig"):
        lab_kubeconfig("cat: /etc/kubernetes/admin.conf: No such file", "schedlab")
