"""The gang scheduler of examples/coscheduling as a lab ships it, for API and browser tests: the lab's plugin
folder and profile, the PodGroup CRD the folder brings, deploy-scheduler's ConfigMap and the real scheduler
process (tests/placement/standins.py), PodGroups and members."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubeapi_testserver.objects import make_pod
from labdef.lab import parse_lab
from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster
from tests.placement.standins import DeploymentStandIn, deploy_scheduler, lab_data

EXAMPLE = PROJECT_ROOT / "examples" / "coscheduling"
SCHEDULER = "my-custom-scheduler"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def gang_lab_data() -> dict[str, Any]:
    """The placement lab with the gang scheduler as its profile (a gang's queue order replaces PrioritySort)."""
    data = lab_data()
    data["scheduler"]["plugins"] = [str(EXAMPLE)]
    data["scheduler"]["profile"] = {"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                                "queueSort": {"disabled": [{"name": "PrioritySort"}]}}}
    return data


@pytest.fixture
def gang_cluster(cluster: Cluster) -> Iterator[tuple[Cluster, DeploymentStandIn]]:
    """The cluster with the PodGroup CRD, the gang lab written over its lab file, the scheduler running."""
    for crd in yaml.safe_load_all((EXAMPLE / "crds" / "podgroup.yaml").read_text()):
        cluster.server.create_object("customresourcedefinitions", crd)
    data = gang_lab_data()
    cluster.lab_file.write_text(yaml.safe_dump(data, sort_keys=False))
    lab = parse_lab(data, "gang lab")
    deploy_scheduler(cluster.server, lab)
    with DeploymentStandIn(cluster.server, lab, cluster.kubeconfig, cluster.workdir) as standin:
        yield cluster, standin


def podgroup(name: str, min_member: int, timeout: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout}}


def add_member(cluster: Cluster, name: str, group: str, cpu: str = "500m", **spec: Any) -> None:
    pod = make_pod(name, cpu=cpu, scheduler_name=SCHEDULER, labels={GROUP_LABEL: group})
    pod["spec"].update(spec)
    cluster.server.add_pod(pod)
