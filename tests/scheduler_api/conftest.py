from tests.kubeapi.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
