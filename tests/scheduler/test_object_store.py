"""ObjectStore, the store of a watched kind: kinds named as the API names them, and the label index kept right
as objects are put, relabelled and removed (what a gang plugin counts its members by)."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import ObjectStore, Resource


def pod(name: str, namespace: str = "ns", **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


@pytest.mark.parametrize(("text", "path"), [
    ("v1/configmaps", "/api/v1/configmaps"),
    ("scheduling.x-k8s.io/v1alpha1/podgroups", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"),
    ("apps/v1/deployments", "/apis/apps/v1/deployments"),
])
def test_kinds_are_named_as_the_api_names_them(text, path):
    assert Resource.parse(text).path == path
    assert str(Resource.parse(text)) == text


@pytest.mark.parametrize("text", ["podgroups", "x/y/z/w", "v1/a/b", "A/v1/x", ""])
def test_a_malformed_kind_says_the_form(text):
    with pytest.raises(ValueError, match="group/version/resource|lower-case"):
        Resource.parse(text)


def test_a_subresource_only_where_writes_allow_it():
    assert Resource.parse("v1/pods/status", subresource=True).object_path("a", "b") == "/api/v1/namespaces/a/pods/b/status"
    with pytest.raises(ValueError):
        Resource.parse("v1/pods/status")


def test_the_label_index_follows_puts_relabels_and_removes():
    """Random puts, relabels and removes: every lookup equals a scan of what the store holds."""
    rng = random.Random(7)
    store = ObjectStore("v1/pods")
    store.labelled("ns", "group", "a")  # index the key early: later changes must keep it right
    for _ in range(500):
        name, namespace = f"p{rng.randrange(40)}", rng.choice(["ns", "other"])
        if rng.random() < 0.3:
            store.remove(pod(name, namespace))
        else:
            store.put(pod(name, namespace, **({"group": rng.choice("ab")} if rng.random() < 0.8 else {})))
        for ns in ("ns", "other"):
            for value in "ab":
                scanned = sorted(k for k, obj in store.items() if k.startswith(f"{ns}/")
                                 and obj["metadata"]["labels"].get("group") == value)
                found = sorted(store.key_of(obj) for obj in store.labelled(ns, "group", value))
                assert found == scanned


def test_field_index_follows_puts_and_removes() -> None:
    store = ObjectStore("v1/pods")

    def pod(name: str, group: str | None, namespace: str = "ns") -> dict:
        spec = {"schedulingGroup": {"podGroupName": group}} if group is not None else {}
        return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}

    store.put(pod("a", "g1"))
    assert [o["metadata"]["name"] for o in store.with_field("ns", "spec.schedulingGroup.podGroupName", "g1")] == ["a"]
    store.put(pod("b", "g1"))
    store.put(pod("c", "g1", namespace="other"))
    store.put(pod("a", "g2"))  # moved to another group
    store.put(pod("d", None))
    store.put({"metadata": {"name": "e", "namespace": "ns"}, "spec": {"schedulingGroup": "not a mapping"}})
    names = sorted(o["metadata"]["name"] for o in store.with_field("ns", "spec.schedulingGroup.podGroupName", "g1"))
    assert names == ["b"]
    store.remove(pod("b", "g1"))
    assert store.with_field("ns", "spec.schedulingGroup.podGroupName", "g1") == []
    assert [o["metadata"]["name"] for o in store.with_field("ns", "spec.schedulingGroup.podGroupName", "g2")] == ["a"]
    assert store.labelled("ns", "spec.schedulingGroup.podGroupName", "g2") == []  # labels stay apart
def claim(name: str, version: str, **status: object) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version}, "status": dict(status)}


def test_a_pending_assumed_version_stands_until_restored_whatever_the_informer_says():
    store = ObjectStore("resource.k8s.io/v1/resourceclaims")
    store.put(claim("c", "5"))
    store.assume(claim("c", "5", allocation="held"), pending=True)
    assert store.pending("ns", "c")
    store.put(claim("c", "6"))  # an update the informer delivers meanwhile
    assert store.get_object("ns", "c")["status"] == {"allocation": "held"}
    store.restore("ns", "c")
    assert not store.pending("ns", "c")
    assert store.get_object("ns", "c")["metadata"]["resourceVersion"] == "6"  # the informer's latest


def test_a_written_assumed_version_stands_until_the_informer_catches_up():
    store = ObjectStore("resource.k8s.io/v1/resourceclaims")
    store.put(claim("c", "5"))
    store.assume(claim("c", "7", allocation="written"))  # the API server's answer to our write
    store.put(claim("c", "6"))  # an older version still on its way
    assert store.get_object("ns", "c")["status"] == {"allocation": "written"}
    store.put(claim("c", "7", allocation="written", seen="yes"))
    assert store.get_object("ns", "c")["status"]["seen"] == "yes"
    store.remove(claim("c", "8"))
    assert store.get_object("ns", "c") is None


def test_derived_values_are_computed_again_only_after_a_change():
    store = ObjectStore("v1/configmaps")
    calls = []

    def count(s: ObjectStore) -> int:
        calls.append(1)
        return len(s)

    store.put(pod("a"))
    assert (store.derived("n", count), store.derived("n", count)) == (1, 1)
    store.assume(pod("b"), pending=True)
    assert store.derived("n", count) == 2
    store.restore("ns", "b")
    assert store.derived("n", count) == 1
    assert len(calls) == 3
