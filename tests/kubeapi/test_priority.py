"""PriorityClass and the Priority admission plugin's effect at pod creation
(plugin/pkg/admission/priority/admission.go), over HTTP."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi_testserver.server import KubeApiServer

pytestmark = pytest.mark.api


def _pod(name: str, **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "pause"}], **spec}}


def _forbidden(core_v1, body: dict) -> str:
    with pytest.raises(client.ApiException) as err:
        core_v1.create_namespaced_pod("default", body)
    status = json.loads(err.value.body)
    assert (err.value.status, status["reason"]) == (403, "Forbidden")
    return status["message"]


def test_priority_class_name_resolves_priority_and_policy(kube_api: KubeApiServer, core_v1):
    kube_api.create_object("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    kube_api.create_object("priorityclasses", {"metadata": {"name": "never"}, "value": 5,
                                               "preemptionPolicy": "Never"})
    assert kube_api.get_object("priorityclasses", "high")["preemptionPolicy"] == "PreemptLowerPriority"
    high = core_v1.create_namespaced_pod("default", _pod("a", priorityClassName="high"))
    assert (high.spec.priority, high.spec.preemption_policy) == (1000, "PreemptLowerPriority")
    assert core_v1.create_namespaced_pod("default", _pod("b", priorityClassName="never")).spec.preemption_policy == "Never"
    assert core_v1.create_namespaced_pod("default", _pod("c")).spec.priority == 0


def test_unknown_class_and_stated_priority_are_refused(kube_api: KubeApiServer, core_v1):
    assert _forbidden(core_v1, _pod("a", priorityClassName="nope")) == (
        'pods "a" is forbidden: no PriorityClass with name nope was found')
    assert _forbidden(core_v1, _pod("b", priority=7)) == (
        'pods "b" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority '
        "admission controller computed 0 from the given PriorityClass name")
    kube_api.create_object("priorityclasses", {"metadata": {"name": "low"}, "value": 1})
    assert _forbidden(core_v1, _pod("c", priorityClassName="low", preemptionPolicy="Never")) == (
        'pods "c" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name")


def test_a_global_default_class_applies_to_pods_without_one(kube_api: KubeApiServer, core_v1):
    kube_api.create_object("priorityclasses", {"metadata": {"name": "base"}, "value": 50, "globalDefault": True})
    pod = core_v1.create_namespaced_pod("default", _pod("a"))
    assert (pod.spec.priority, pod.spec.priority_class_name) == (50, "base")
