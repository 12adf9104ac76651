"""The scheduler's RBAC grants what the profile's plugins declare (Plugin.watches, Plugin.writes), parsed from
the rendered manifests, in standalone and extender mode."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import yaml

from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit.scheduler_deploy.manifests import render_manifests

IMAGE = "localhost/kubelab-scheduler:0.1.0-0123456789ab"

# A filter plugin reading PodGroups and a ConfigMap, whose binding cycle writes PodGroup status.
SOURCE = '''"""GroupGate: a test plugin declaring the kinds it reads and writes."""
from scheduler.framework import Plugin


def pre_filter(pod, args):
    return None


def filter_node(state, node):
    return None


PLUGINS = [Plugin("GroupGate", pre_filter=pre_filter, filter_node=filter_node,
                  watches=("scheduling.x-k8s.io/v1alpha1/podgroups", "v1/configmaps"),
                  writes=("scheduling.x-k8s.io/v1alpha1/podgroups/status", "v1/configmaps")),
           Plugin("Unused", pre_filter=pre_filter, filter_node=filter_node, watches=("example.com/v1/widgets",))]
'''


def plugin_lab(tmp_path: Path, enabled: tuple[str, ...] = ("GroupGate",), mode: str = "standalone") -> Lab:
    folder = tmp_path / "my_plugins" / "group_gate"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(SOURCE)
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["scheduler"]["plugins"] = ["my_plugins/group_gate"]
    data["scheduler"]["profile"] = {"plugins": {"multiPoint": {"enabled": [{"name": n} for n in enabled]}}}
    data["scheduler"]["mode"] = mode
    data["placement"] = {}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(data))
    return load_lab(tmp_path / "lab.yaml")


def cluster_role_rules(lab: Lab, name: str) -> list[dict]:
    docs = [obj for m in render_manifests(lab, IMAGE) for obj in m.objects]
    [role] = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    kubernetes_validate.validate(role, lab.kubernetes.version, strict=True)
    return role["rules"]


def granted(rules: list[dict], group: str, resource: str) -> set[str]:
    return {verb for r in rules if group in r["apiGroups"] and resource in r["resources"] for verb in r["verbs"]}


def test_watched_kinds_are_readable_and_declared_writes_writable(tmp_path: Path) -> None:
    lab = plugin_lab(tmp_path)
    rules = cluster_role_rules(lab, lab.scheduler.name)
    assert granted(rules, "scheduling.x-k8s.io", "podgroups") == {"get", "list", "watch"}
    assert granted(rules, "scheduling.x-k8s.io", "podgroups/status") == {"create", "update", "patch"}
    assert granted(rules, "", "configmaps") == {"get", "list", "watch", "create", "update", "patch"}
    assert granted(rules, "example.com", "widgets") == set()  # Unused is loaded but not enabled


def test_without_declaring_plugins_the_role_is_as_before(tmp_path: Path) -> None:
    lab = plugin_lab(tmp_path, enabled=())
    rules = cluster_role_rules(lab, lab.scheduler.name)
    assert granted(rules, "scheduling.x-k8s.io", "podgroups") == set()
    assert granted(rules, "", "configmaps") == set()
    assert granted(rules, "", "pods") == {"get", "list", "watch", "delete"}


def test_enabling_both_grants_both_in_one_rule_per_group(tmp_path: Path) -> None:
    lab = plugin_lab(tmp_path, enabled=("GroupGate", "Unused"))
    rules = cluster_role_rules(lab, lab.scheduler.name)
    reads = [r for r in rules if r["verbs"] == ["get", "list", "watch"] and r["apiGroups"] != [""]]
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in reads} >= {
        (("example.com",), ("widgets",)), (("scheduling.x-k8s.io",), ("podgroups",))}


def test_the_extender_reads_what_its_plugins_watch(tmp_path: Path) -> None:
    lab = plugin_lab(tmp_path, mode="extender")
    rules = cluster_role_rules(lab, f"{lab.scheduler.name}-extender")
    assert granted(rules, "scheduling.x-k8s.io", "podgroups") == {"get", "list", "watch"}


def test_gang_gates_grant_what_gang_scheduling_reads_and_writes(tmp_path: Path) -> None:
    """With GenericWorkload and GangScheduling on, the scheduler's default profile runs GangScheduling: its
    ClusterRole lets it watch PodGroups and write their status; without them it does not."""
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    data["placement"] = {}
    data["scheduler"]["plugins"] = []
    data["scheduler"].pop("profile", None)
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(data))
    plain = load_lab(tmp_path / "lab.yaml")
    data["kubernetes"]["feature_gates"] = {"GenericWorkload": True, "GangScheduling": True}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(data))
    gated = load_lab(tmp_path / "lab.yaml")
    rules = cluster_role_rules(gated, gated.scheduler.name)
    assert granted(rules, "scheduling.k8s.io", "podgroups") >= {"get", "list", "watch"}
    assert granted(rules, "scheduling.k8s.io", "podgroups/status") >= {"patch"}
    plain_docs = [obj for m in render_manifests(plain, IMAGE) for obj in m.objects]
    assert "podgroups" not in yaml.safe_dump(plain_docs)
