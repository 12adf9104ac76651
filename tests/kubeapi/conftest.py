from kubeapi_testserver.fixtures import core_v1, kube_api, kube_api_client, kube_api_kubeconfig  # noqa: F401
