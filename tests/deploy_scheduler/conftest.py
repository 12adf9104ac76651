"""Fixtures: the Kubernetes API test server (tests/kubeapi) for the rollout tests."""

from tests.kubeapi.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
