from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from kubeapi_testserver.kubeconfig import write_kubeconfig
from kubeapi_testserver.server import KubeApiServer
from tests.faults.proxy import FaultProxy


@pytest.fixture
def proxy(kube_api: KubeApiServer) -> Iterator[FaultProxy]:  # noqa: F811
    """The fault-injecting proxy in front of `kube_api`."""
    fault_proxy = FaultProxy(kube_api.port).start()
    try:
        yield fault_proxy
    finally:
        fault_proxy.stop()


@pytest.fixture
def proxied_kubeconfig(proxy: FaultProxy, kube_api: KubeApiServer, tmp_path: Path) -> Path:  # noqa: F811
    """A kubeconfig whose server is the proxy: every request of the scheduler crosses it."""
    return write_kubeconfig(tmp_path / "kubeconfig", proxy.url, token=kube_api.token)
