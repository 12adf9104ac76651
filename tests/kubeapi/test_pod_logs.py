"""pods/log on the API test server: the log text tests write, answered as kube-apiserver and the kubelet do
(kubeapi_testserver/pod_logs.py); checked with the host's real kubectl where one is installed."""

import subprocess
import threading
import time

import pytest

from kubeapi_testserver.objects import make_pod
from tests.debian_testing import debian_testing_kubectl

pytestmark = pytest.mark.api

RUNNING = {"state": {"running": {"startedAt": "2026-11-24T07:00:00Z"}}}


def running_pod(kube_api, name="sched-0", containers=("scheduler",), **status_of):
    pod = make_pod(name, node_name="node-0")
    pod["spec"]["containers"] = [{"name": c, "image": "img"} for c in containers]
    kube_api.add_pod(pod)
    statuses = [{"name": c, "ready": True, "restartCount": 0, "image": "img", "imageID": "",
                 **status_of.get(c, RUNNING)} for c in containers]
    kube_api.update_pod(name, {"status": {"phase": "Running", "containerStatuses": statuses}})


def kubectl(kube_api, tmp_path, *args):
    """Real kubectl of the lab's minor (tests/debian_testing.py) against the API test server."""
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    return subprocess.run([debian_testing_kubectl(), "--kubeconfig", str(config), *args], capture_output=True,
                          text=True, check=False, timeout=60)


def test_kubectl_reads_the_lines_written_and_since_drops_older_ones(kube_api, tmp_path):
    running_pod(kube_api)
    kube_api.write_pod_log("sched-0", "old line", container="scheduler", at=time.time() - 600)
    kube_api.write_pod_log("sched-0", "line one\nline two", container="scheduler")
    assert kubectl(kube_api, tmp_path, "logs", "sched-0").stdout == "old line\nline one\nline two\n"
    assert kubectl(kube_api, tmp_path, "logs", "sched-0", "--since=5m").stdout == "line one\nline two\n"


def test_several_containers_need_one_named(kube_api, tmp_path):
    running_pod(kube_api, containers=("scheduler", "kube-scheduler"))
    proc = kubectl(kube_api, tmp_path, "logs", "sched-0", "--all-containers=false", "-c", "nope")
    assert proc.returncode == 1
    assert "container nope is not valid for pod sched-0" in proc.stderr


def test_the_container_choice_is_the_api_servers(kube_api, core_v1):
    from kubernetes.client.exceptions import ApiException

    running_pod(kube_api, containers=("scheduler", "kube-scheduler"))
    with pytest.raises(ApiException) as err:
        core_v1.read_namespaced_pod_log("sched-0", "default")
    assert err.value.status == 400
    assert ("a container name must be specified for pod sched-0, choose one of: [scheduler kube-scheduler]"
            in err.value.body)


def test_previous_without_a_terminated_instance_is_the_kubelets_400(kube_api, tmp_path):
    running_pod(kube_api)
    proc = kubectl(kube_api, tmp_path, "logs", "sched-0", "--previous")
    assert proc.returncode == 1
    assert 'previous terminated container "scheduler" in pod "sched-0" not found' in proc.stderr


def test_a_crash_looping_container_shows_its_last_instance(kube_api, tmp_path):
    crashed = {"state": {"waiting": {"reason": "CrashLoopBackOff"}},
               "lastState": {"terminated": {"reason": "Error", "exitCode": 2, "containerID": "containerd://1"}}}
    running_pod(kube_api, scheduler=crashed)
    kube_api.write_pod_log("sched-0", "error: bad config", container="scheduler", previous=True)
    assert kubectl(kube_api, tmp_path, "logs", "sched-0").stdout == "error: bad config\n"
    assert kubectl(kube_api, tmp_path, "logs", "sched-0", "--previous").stdout == "error: bad config\n"


def test_follow_streams_later_lines_until_the_container_exits(kube_api, tmp_path):
    running_pod(kube_api)
    kube_api.write_pod_log("sched-0", "first", container="scheduler")

    def later():
        time.sleep(0.5)
        kube_api.write_pod_log("sched-0", "second", container="scheduler")
        kube_api.end_pod_log("sched-0", container="scheduler")

    writer = threading.Thread(target=later)
    writer.start()
    proc = kubectl(kube_api, tmp_path, "logs", "-f", "sched-0")
    writer.join()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "first\nsecond\n"
