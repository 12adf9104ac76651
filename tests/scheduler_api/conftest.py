from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
