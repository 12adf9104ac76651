"""The deploys suite's API tests (real kubectl against the API test server) use its fixtures."""

from kubeapi_testserver.fixtures import kube_api  # noqa: F401
