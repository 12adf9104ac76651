"""A kubeconfig with `insecure-skip-tls-verify`: one notice of ours per run, not urllib3's warning per request.

The Kubernetes API test server (kubeapi_testserver, plain HTTP of its own) is put behind TLS here with a
throwaway self-signed certificate made by `openssl`, and the kubeconfig tells clients not to check it, as a
lab cluster's kubeconfig sometimes does. Each client runs in a subprocess, as users run it: the notice is
once per process, and urllib3's warnings are printed, not collected by pytest.
"""

import shutil
import ssl
import subprocess
import sys

import pytest
import yaml

from labkit.paths import PROJECT_ROOT
from tests.unavailable import skip_or_fail

NOTICE = "skips TLS verification for https://127.0.0.1:"
URLLIB3_WARNING = "InsecureRequestWarning"

# The scheduler's path (scheduler.cli and the benchmarks load credentials through load_configuration).
SCHEDULER_CLIENT = """
import logging, sys
from scheduler.runtime.client import Client, load_configuration
logging.basicConfig(level=logging.INFO)
for _ in range(2):
    client = Client(load_configuration(sys.argv[1]))
    for _ in range(5):
        client.get("/api/v1/nodes")
"""


@pytest.fixture
def https_kube_api(kube_api, tmp_path):
    """`kube_api` served over TLS, and a kubeconfig for it with `insecure-skip-tls-verify: true`."""
    if not shutil.which("openssl"):
        skip_or_fail("openssl is not installed (it makes the test server's certificate)")
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    # The test server has no TLS option: wrap its listening socket (already serving) before any client connects.
    kube_api._httpd.socket = context.wrap_socket(kube_api._httpd.socket, server_side=True)
    config = yaml.safe_load(kube_api.write_kubeconfig(tmp_path / "kubeconfig").read_text())
    config["clusters"][0]["cluster"] = {"server": f"https://127.0.0.1:{kube_api.port}",
                                        "insecure-skip-tls-verify": True}
    kubeconfig = tmp_path / "insecure-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    return kube_api, kubeconfig


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], check=False, capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=120)


@pytest.mark.api
def test_a_placement_run_says_it_once(https_kube_api):
    """test-placement against a cluster without the scheduler: dozens of requests, one notice."""
    server, kubeconfig = https_kube_api
    server.add_node("k8s-control-plane", labels={"node-role.kubernetes.io/control-plane": ""})
    server.add_node("k8s-worker-01")
    proc = run("-m", "labkit.placement", "--kubeconfig", str(kubeconfig), "--probe-seconds", "1")
    assert proc.returncode == 3, proc.stderr  # reached the server over TLS: "the scheduler is not running"
    assert len(server.requests) > 10
    assert proc.stderr.count(NOTICE) == 1, proc.stderr
    assert f"warning: the kubeconfig {kubeconfig} {NOTICE}" in proc.stderr
    assert URLLIB3_WARNING not in proc.stderr


@pytest.mark.api
def test_the_schedulers_client_says_it_once(https_kube_api):
    server, kubeconfig = https_kube_api
    proc = run("-c", SCHEDULER_CLIENT, str(kubeconfig))
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 10
    assert proc.stderr.count(NOTICE) == 1, proc.stderr
    assert URLLIB3_WARNING not in proc.stderr


def test_a_verified_kubeconfig_gets_no_notice(tmp_path):
    from kubernetes import client

    from scheduler.runtime.client import unverified_tls_notice

    configuration = client.Configuration(host="https://192.168.56.10:6443")
    assert unverified_tls_notice(configuration, "kubeconfig") == ""
    configuration.verify_ssl = False
    assert "192.168.56.10:6443" in unverified_tls_notice(configuration, "kubeconfig")
