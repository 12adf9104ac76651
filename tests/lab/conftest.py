"""The lab suite's API tests use the Kubernetes API test server's fixtures."""

from tests.kubeapi.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
