"""pytest fixtures and a context manager for the Kubernetes API test server.

Use in a conftest.py:  `pytest_plugins = ["kubeapi_testserver.fixtures"]`  (top-level conftest only),
or import the fixtures by name:  `from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kubeapi_testserver.server import KubeApiServer


@contextmanager
def running_server(**kwargs: Any) -> Iterator[KubeApiServer]:
    """Start a KubeApiServer on 127.0.0.1 (free port) in a background thread; stop it on exit."""
    server = KubeApiServer(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now, e.g. to write a kubeconfig before the server starts
    (for "API server unreachable at start-up" tests)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def api_client_for(kubeconfig: str | Path) -> client.ApiClient:
    """An official-client ApiClient built from a kubeconfig, as the scheduler would build it."""
    return config.new_client_from_config(str(kubeconfig))


@pytest.fixture
def kube_api() -> Iterator[KubeApiServer]:
    """A fresh running server per test (namespaces default, kube-system, kube-public, kube-node-lease)."""
    with running_server() as server:
        yield server


@pytest.fixture
def kube_api_kubeconfig(kube_api: KubeApiServer, tmp_path: Path) -> Path:
    """Path of a kubeconfig for `kube_api` that kubernetes.config.load_kube_config accepts."""
    return kube_api.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube_api_client(kube_api_kubeconfig: Path) -> Iterator[client.ApiClient]:
    api_client = api_client_for(kube_api_kubeconfig)
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def core_v1(kube_api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api_client)
