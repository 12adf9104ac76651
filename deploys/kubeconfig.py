"""The host's kubeconfig: kubeadm's admin.conf with its names replaced by the lab's, so it can sit
beside other clusters' configs (KUBECONFIG=a:b) without clashing on "kubernetes-admin@kubernetes"."""

from __future__ import annotations

import yaml


class AdminConfError(ValueError):
    """What the control plane holds at /etc/kubernetes/admin.conf is not a kubeconfig."""


def lab_kubeconfig(admin_conf: str, lab_name: str) -> str:
    try:
        config = yaml.safe_load(admin_conf)
        cluster = config["clusters"][0]
        user = config["users"][0]
    except (yaml.YAMLError, KeyError, IndexError, TypeError) as err:
        raise AdminConfError(f"admin.conf from the control plane is not a kubeconfig: {err}") from None
    user_name = f"{lab_name}-admin"
    result = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": lab_name, "cluster": cluster["cluster"]}],
        "users": [{"name": user_name, "user": user["user"]}],
        "contexts": [{"name": lab_name, "context": {"cluster": lab_name, "user": user_name}}],
        "current-context": lab_name,
        "preferences": {},
    }
    return yaml.safe_dump(result, sort_keys=False)
