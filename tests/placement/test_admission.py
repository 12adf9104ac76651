"""labkit.placement.admission: what the API server adds to a pod at creation, so that `explain --what-if` judges
the pod the scheduler would see. Checked against the recorded kube-scheduler v1.36.2 corpus (each probe's
``pod_manifest`` as sent and ``pod`` as the API server returned it) and case by case."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.placement.admission import AdmissionRefused, ClusterPolicy, admit
from tests.kube_scheduler_corpus import compare, corpus_files, corpus_folder, judge, load_state, read

# The pod fields admission writes that a scheduler plugin reads.
READ = ("priority", "preemptionPolicy", "overhead", "nodeSelector", "priorityClassName")


def policy_of(doc: dict) -> ClusterPolicy:
    objects = doc["objects"]
    return ClusterPolicy({rc["metadata"]["name"]: rc for rc in objects["runtimeclasses"]},
                         objects["priorityclasses"])


def _toleration_set(spec: dict) -> set:
    return {tuple(sorted(t.items())) for t in spec.get("tolerations") or []}


@pytest.mark.parametrize("path", corpus_files("cases") or [None], ids=[p.stem for p in corpus_files("cases")] or None)
def test_manifest_with_admission_is_judged_as_the_created_pod(path: Path | None) -> None:
    """The corpus README's step 4: each probe's manifest, admission applied, gets kube-scheduler's verdict,
    and carries what the API server added to it (priority, overhead, tolerations)."""
    corpus_folder("cases")
    assert path is not None
    doc = read(path)
    state, policy = load_state(doc), policy_of(doc)
    problems = []
    for probe in doc["probes"]:
        admitted = admit(probe["pod_manifest"], policy).pod["spec"]
        created = probe["pod"]["spec"]
        for key in READ:
            if admitted.get(key) != created.get(key):
                problems.append(f"probe {probe['index']}: spec.{key} {admitted.get(key)!r} != {created.get(key)!r}")
        if _toleration_set(admitted) != _toleration_set(created):
            problems.append(f"probe {probe['index']}: tolerations {admitted.get('tolerations')} != "
                            f"{created.get('tolerations')}")
        pod = {**probe["pod_manifest"], "spec": admitted}
        problems += [str(m) for m in compare(doc, probe, judge(state, pod))]
    assert not problems, "\n  ".join([path.name, *problems])


def test_manifest_as_written_would_be_judged_wrongly_without_admission():
    """The reason for all this: the repro-whatif-overhead probe fits a node its created pod does not."""
    path = corpus_folder("cases") / "repro-whatif-overhead.json"
    doc = read(path)
    probe = doc["probes"][0]
    mismatches = list(compare(doc, probe, judge(load_state(doc), probe["pod_manifest"])))
    assert [m.kind for m in mismatches][:1] == ["feasible"]


def manifest(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause"}], **spec}}


GVISOR = {"metadata": {"name": "gvisor"}, "overhead": {"podFixed": {"cpu": "250m"}},
          "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                         "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


def test_runtime_class_adds_overhead_node_selector_and_tolerations():
    admitted = admit(manifest(runtimeClassName="gvisor", nodeSelector={"disk": "ssd"}),
                     ClusterPolicy({"gvisor": GVISOR}))
    spec = admitted.pod["spec"]
    assert spec["overhead"] == {"cpu": "250m"}
    assert spec["nodeSelector"] == {"disk": "ssd", "sandbox": "gvisor"}
    assert {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert "overhead cpu 250m from RuntimeClass gvisor" in admitted.added


@pytest.mark.parametrize(("spec", "message"), [
    ({"runtimeClassName": "kata"}, 'pod rejected: RuntimeClass "kata" not found'),
    ({"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}},
     "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
    ({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "kata"}},
     "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"),
    ({"priorityClassName": "urgent"}, "no PriorityClass with name urgent was found"),
    ({"priorityClassName": "high", "priority": 5}, ("the integer value of priority (5) must not be provided in "
     "pod spec; priority admission controller computed 1000 from the given PriorityClass name")),
])
def test_what_the_api_server_would_refuse_is_refused_with_its_message(spec, message):
    classes = [{"metadata": {"name": "high"}, "value": 1000}]
    with pytest.raises(AdmissionRefused) as err:
        admit(manifest(**spec), ClusterPolicy({"gvisor": GVISOR}, classes))
    assert str(err.value) == message


def test_priority_from_the_named_or_the_global_default_class():
    classes = [{"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
               {"metadata": {"name": "normal"}, "value": 10, "globalDefault": True}]
    named = admit(manifest(priorityClassName="high"), ClusterPolicy(priority_classes=classes)).pod["spec"]
    assert (named["priority"], named["preemptionPolicy"]) == (1000, "Never")
    default = admit(manifest(), ClusterPolicy(priority_classes=classes)).pod["spec"]
    assert (default["priority"], default["priorityClassName"]) == (10, "normal")
    assert admit(manifest(), ClusterPolicy()).pod["spec"]["priority"] == 0


def test_default_tolerations_unless_already_tolerated():
    spec = admit(manifest(), ClusterPolicy()).pod["spec"]
    assert [(t["key"], t["tolerationSeconds"]) for t in spec["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300)]
    everything = admit(manifest(tolerations=[{"operator": "Exists"}]), ClusterPolicy()).pod["spec"]
    assert everything["tolerations"] == [{"operator": "Exists"}]


def test_a_limit_range_is_named_as_not_applied():
    admitted = admit(manifest(), ClusterPolicy(limit_ranges=[{"metadata": {"name": "defaults"}}]))
    assert admitted.unknown == [("LimitRange defaults in the pod's namespace may give its containers default "
                                "requests at creation; they are not applied here")]
