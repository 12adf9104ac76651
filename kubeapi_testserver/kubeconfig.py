"""Write a kubeconfig pointing at the test server (plain http; bearer token optional).

Format: https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/ ,
read by kubernetes.config.load_kube_config and by kubectl.
"""

from __future__ import annotations

from pathlib import Path

import yaml

CONTEXT = "kubelab-test"


def kubeconfig_dict(server_url: str, token: str | None = None, namespace: str = "default") -> dict:
    user: dict[str, str] = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server_url}}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, server_url: str, *, token: str | None = None,
                     namespace: str = "default") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig_dict(server_url, token, namespace), sort_keys=False))
    path.chmod(0o600)
    return path
