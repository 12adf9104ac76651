"""`./lab logs` against the API test server: the scheduler's pods found from the lab definition, the
leader's first, lines prefixed, and why there is nothing to read when no scheduler runs."""

import os
import re
import subprocess
import sys
import threading
import time

import pytest

from kubeapi_testserver.objects import make_pod
from labdef.lab import DEFAULT_LAB_FILE, load_lab
from labkit.kube import Kube
from labkit.paths import PROJECT_ROOT
from labkit.scheduler_deploy.manifests import selector_labels
from labkit.scheduler_logs import LogOptions, SchedulerNotRunning, parse_since, show_logs
from scheduler.runtime.leader import micro_time

pytestmark = pytest.mark.api

LAB = load_lab(DEFAULT_LAB_FILE)
NS, NAME = LAB.scheduler.namespace, LAB.scheduler.name
RUNNING = {"state": {"running": {"startedAt": "2026-11-24T07:00:00Z"}}}
CRASHED = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "restartCount": 4,
           "lastState": {"terminated": {"reason": "Error", "exitCode": 2, "containerID": "containerd://9"}}}


def deployment(kube_api, replicas=1):
    kube_api.create_object("deployments", {
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector_labels(LAB)},
                 "template": {"metadata": {"labels": selector_labels(LAB)},
                              "spec": {"containers": [{"name": "scheduler", "image": "img"}]}}}})


def scheduler_pod(kube_api, name, containers=("scheduler",), status=RUNNING):
    pod = make_pod(name, NS, node_name="node-0", labels=selector_labels(LAB))
    pod["spec"]["containers"] = [{"name": c, "image": "img"} for c in containers]
    kube_api.add_pod(pod, NS)
    statuses = [{"name": c, "ready": True, "image": "img", "imageID": "", **status} for c in containers]
    kube_api.update_pod(name, {"status": {"phase": "Running", "containerStatuses": statuses}}, NS)


def leader(kube_api, pod, renewed_ago=1.0):
    """The Lease as the scheduler's leader election writes it, last renewed this many seconds ago."""
    kube_api.create_object("leases", {"metadata": {"name": NAME, "namespace": NS},
                                      "spec": {"holderIdentity": f"{pod}_0b3c6a4e-3f51-4a8e-9a53-6f0a1c2d3e4f",
                                               "leaseDurationSeconds": 15, "leaseTransitions": 0,
                                               "acquireTime": micro_time(time.time() - 300),
                                               "renewTime": micro_time(time.time() - renewed_ago)}})


@pytest.fixture
def kube(kube_api_kubeconfig):
    client = Kube.from_kubeconfig(kube_api_kubeconfig)
    yield client
    client.close()


def read(kube, **options):
    out, err = [], []
    complete = show_logs(kube, LAB, LogOptions(**options), out.append, err.append)
    return complete, out, err


def test_the_leaders_lines_come_first_each_prefixed_with_its_pod(kube_api, kube):
    deployment(kube_api, replicas=2)
    for pod in ("sched-a", "sched-b"):
        scheduler_pod(kube_api, pod)
        kube_api.write_pod_log(pod, f"{pod} line 1\n{pod} line 2", NS, container="scheduler")
    leader(kube_api, "sched-b")
    complete, out, err = read(kube)
    assert complete and not err
    assert out == ["[pod/sched-b] sched-b line 1", "[pod/sched-b] sched-b line 2",
                   "[pod/sched-a] sched-a line 1", "[pod/sched-a] sched-a line 2"]


def test_an_expired_lease_names_no_leader(kube_api, kube):
    """Every replica gone quiet (e.g. all cut off from the API server): the last holder is not presented as the
    leader; the pods come in name order, after the note."""
    deployment(kube_api, replicas=2)
    for pod in ("sched-a", "sched-b"):
        scheduler_pod(kube_api, pod)
        kube_api.write_pod_log(pod, f"{pod} line", NS, container="scheduler")
    leader(kube_api, "sched-b", renewed_ago=60)
    complete, out, err = read(kube)
    assert complete
    assert out == ["[pod/sched-a] sched-a line", "[pod/sched-b] sched-b line"]
    assert len(err) == 1
    assert err[0].startswith(f"no replica is leading: Lease {NS}/{NAME} was last renewed ")
    assert re.search(r"last renewed 6\d s ago and lasts 15 s", err[0]), err[0]  # 60 s, or a little more when the host is busy
    assert "its holder sched-b is not leading" in err[0]


def test_every_container_of_a_pod_with_several_is_read_and_named(kube_api, kube):
    deployment(kube_api)
    scheduler_pod(kube_api, "sched-x", containers=("kube-scheduler", "extender"))
    kube_api.write_pod_log("sched-x", "from kube-scheduler", NS, container="kube-scheduler")
    kube_api.write_pod_log("sched-x", "from the extender", NS, container="extender")
    assert read(kube)[1] == ["[pod/sched-x/kube-scheduler] from kube-scheduler",
                             "[pod/sched-x/extender] from the extender"]
    assert read(kube, container="extender")[1] == ["[pod/sched-x/extender] from the extender"]


def test_since_keeps_only_newer_lines(kube_api, kube):
    deployment(kube_api)
    scheduler_pod(kube_api, "sched-a")
    kube_api.write_pod_log("sched-a", "an hour ago", NS, container="scheduler", at=time.time() - 3600)
    kube_api.write_pod_log("sched-a", "just now", NS, container="scheduler")
    assert read(kube, since_seconds=parse_since("10m"))[1] == ["[pod/sched-a] just now"]


def test_previous_without_a_restart_says_what_the_server_said(kube_api, kube):
    deployment(kube_api)
    scheduler_pod(kube_api, "sched-a")
    complete, out, err = read(kube, previous=True)
    assert not complete and out == []
    assert len(err) == 1 and err[0].startswith("[pod/sched-a] no logs:")
    assert 'previous terminated container "scheduler" in pod "sched-a" not found' in err[0]


def test_crash_looping_says_how_it_last_ended_then_shows_that_instances_log(kube_api, kube):
    deployment(kube_api)
    scheduler_pod(kube_api, "sched-a", status=CRASHED)
    kube_api.write_pod_log("sched-a", "error: config: unknown plugin Foo", NS, container="scheduler", previous=True)
    complete, out, err = read(kube)
    assert complete
    assert err == [("pod sched-a container scheduler is crash-looping (4 restarts): it last terminated with "
                    "Error, exit code 2 (its previous instance's log follows)")]
    assert out == ["[pod/sched-a] error: config: unknown plugin Foo"]


def test_not_deployed(kube_api, kube):
    with pytest.raises(SchedulerNotRunning, match=f"not deployed: no Deployment {NS}/{NAME}.*deploy-scheduler"):
        read(kube)


def test_scaled_to_zero(kube_api, kube):
    deployment(kube_api, replicas=0)
    with pytest.raises(SchedulerNotRunning, match="scaled to 0.*--replicas=1"):
        read(kube)


def test_follow_streams_new_lines_until_the_container_ends(kube_api, kube):
    deployment(kube_api)
    scheduler_pod(kube_api, "sched-a")
    kube_api.write_pod_log("sched-a", "before", NS, container="scheduler")

    def later():
        time.sleep(0.5)
        kube_api.write_pod_log("sched-a", "after", NS, container="scheduler")
        kube_api.end_pod_log("sched-a", NS, container="scheduler")

    threading.Thread(target=later).start()
    assert read(kube, follow=True)[1] == ["[pod/sched-a] before", "[pod/sched-a] after"]


def test_bad_since_names_the_option():
    with pytest.raises(Exception, match="--since '10 minutes'.*30s, 5m"):
        parse_since("10 minutes")


def test_the_verb_without_a_scheduler_says_why_and_exits_2(kube_api, kube_api_kubeconfig):
    proc = subprocess.run([sys.executable, "-m", "invoke", "logs", "--kubeconfig", str(kube_api_kubeconfig)],
                          capture_output=True, text=True, check=False, timeout=120, cwd=PROJECT_ROOT,
                          env=dict(os.environ, COLUMNS="200"))
    assert proc.returncode == 2
    assert f"the scheduler is not deployed: no Deployment {NS}/{NAME}" in proc.stderr
