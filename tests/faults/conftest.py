from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.proxy import FaultProxy
from tests.kubeapi.fixtures import kube_api  # noqa: F401
from tests.kubeapi.kubeconfig import write_kubeconfig
from tests.kubeapi.server import KubeApiServer


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
