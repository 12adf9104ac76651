"""The placement suites' lab-shaped cluster on the API test server, for the tutorial's API-tier steps."""

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from tests.placement.conftest import cluster  # noqa: F401
