"""Fixtures: the Kubernetes API test server (kubeapi_testserver) for the rollout tests."""

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
