"""The plugin seam: the layers import one way, a plugin descriptor keeps its contract or is refused at
registration, and user plugins load from a module, a file, a folder or an entry point into a registry that
config parsing and profile building take as a value."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scheduler.config import ConfigError, parse_config
from scheduler.framework import (
    ClusterEvent,
    Plugin,
    PluginError,
    Registry,
    build_profiles,
    in_tree_registry,
    load_registry,
    same_state,
)
from tests import bundled_plugins
from tests.scheduler.builders import node, pod

REPO = Path(__file__).resolve().parents[2]
SCHEDULER = REPO / "scheduler"
HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


# ------------------------------------------------------------------------------------------ layering


def imported_modules(source: str) -> set[str]:
    """Every module a Python source imports, anywhere in it (function bodies and TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for item in ast.walk(ast.parse(source)):
        if isinstance(item, ast.Import):
            found.update(alias.name for alias in item.names)
        elif isinstance(item, ast.ImportFrom) and item.module and not item.level:
            found.add(item.module)
            found.update(f"{item.module}.{alias.name}" for alias in item.names)  # from scheduler import plugins
    return found


def plugin_imports(path: Path) -> list[str]:
    """The imports of scheduler.plugins (or any module in it) in one file."""
    return sorted(m for m in imported_modules(path.read_text()) if m == "scheduler.plugins"
                  or m.startswith("scheduler.plugins."))


# kube-scheduler's direction: plugins depend on the framework, the framework knows none of them.
PLUGIN_FREE = sorted([*(SCHEDULER / "framework").glob("*.py"), SCHEDULER / "config.py",
                      SCHEDULER / "runtime" / "cache.py"])
assert len(PLUGIN_FREE) > 10, f"{SCHEDULER / 'framework'} moved: the layering check would check nothing"


@pytest.mark.parametrize("path", PLUGIN_FREE, ids=lambda p: str(p.relative_to(REPO)))
def test_framework_config_and_cache_import_no_plugin(path):
    assert plugin_imports(path) == []


@pytest.mark.parametrize("added", [
    "from scheduler.plugins import in_tree_registry",
    "from scheduler.plugins.node_name import NAME",
    "import scheduler.plugins.node_ports",
    "from scheduler import plugins",
    "def later():\n    from scheduler.plugins import PLUGINS\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scheduler.plugins import PLUGINS\n",
])
def test_the_layering_check_sees_an_added_plugin_import(tmp_path, added):
    config = tmp_path / "config.py"
    config.write_text((SCHEDULER / "config.py").read_text() + "\n" + added + "\n")
    assert plugin_imports(config)


def test_bundled_plugins_use_only_the_public_api():
    paths = sorted((SCHEDULER / "plugins").glob("*.py"))
    assert len(paths) > 10, f"{SCHEDULER / 'plugins'} moved: nothing would be checked"
    for path in paths:
        modules = {item.module for item in ast.walk(ast.parse(path.read_text()))
                   if isinstance(item, ast.ImportFrom) and item.module and item.module.startswith("scheduler")}
        # scheduler.dra: the DRA library DynamicResources uses (it depends on the framework only)
        internal = [m for m in modules if m != "scheduler.framework" and not m.startswith(
            ("scheduler.model", "scheduler.plugins", "scheduler.dra"))]
        assert internal == [], f"{path.name} imports {internal}: use scheduler.framework and scheduler.model"


# -------------------------------------------------------------------------------- contracts, refusal


def _pre(pod, args):
    return pod


def _pre_cluster(pod, args, cluster):
    return pod


def _filter(state, node):
    return None


def _filter_batch(state, nodes):
    return None


def _pre_score(pod, args):
    return pod


def _score(state, node):
    return 0


def _score_batch(state, nodes):
    return [0] * len(nodes)


def _normalize(scores, args):
    return None


@pytest.mark.parametrize(("fields", "problem"), [
    ({"pre_filter": _pre, "filter_batch": _filter_batch}, "filter_batch without filter_node"),
    ({"filter_node": _filter}, "filter_node without pre_filter"),
    ({"pre_score": _pre_score, "score_batch": _score_batch}, "pre_score without score_node"),
    ({"score_node": _score}, "score_node without pre_score"),
    ({"pre_filter": _pre, "filter_node": _filter, "normalize": _normalize}, "normalize without score_node"),
    ({"pre_filter": _pre_cluster, "filter_node": _filter, "reads_cluster": True, "score_batch": _score_batch},
     "score_batch without score_node"),
    ({"pre_filter": _pre, "filter_node": _filter, "replace_node": same_state},
     "replace_node without reads_cluster"),
    ({"pre_score": _pre_score, "score_node": _score, "replace_node": same_state},
     "replace_node without pre_filter"),
    ({"reads_cluster": True}, "reads_cluster without pre_filter or pre_score"),
    ({"pre_score": _pre_score, "score_node": _score, "requeue_on": ClusterEvent.NODE_ADDED},
     "requeue_on without a filter"),
    ({}, "implements no extension point"),
    ({"post_filter": True}, "post_filter: the framework's preemption reads num_candidates"),
    # the typed contracts: one call signature per extension point
    ({"pre_filter": _pre, "filter_node": _filter, "reads_cluster": True}, "pre_filter: '_pre' takes (pod, args)"),
    ({"pre_filter": _pre_cluster, "filter_node": _filter}, "pre_filter: '_pre_cluster' takes (pod, args, cluster)"),
    ({"pre_filter": _pre, "filter_node": _pre_cluster}, "filter_node: '_pre_cluster' takes"),
    ({"pre_score": _pre_score, "score_node": _score, "normalize": _pre_cluster}, "normalize: '_pre_cluster'"),
])
def test_a_bad_combination_is_refused_at_registration_with_its_name(fields, problem):
    with pytest.raises(PluginError) as err:
        Registry([Plugin("Mine", **fields)], "my_plugins.py")
    assert "my_plugins.py: plugin 'Mine' is refused" in str(err.value)
    assert problem in str(err.value)


@pytest.mark.parametrize("name", ["", "*", "Two words"])
def test_a_bad_name_is_refused(name):
    with pytest.raises(PluginError, match="use a non-empty name without spaces"):
        Registry([Plugin(name, pre_filter=_pre, filter_node=_filter)], "src")


def test_args_must_be_an_args_model():
    with pytest.raises(PluginError, match="use a subclass of scheduler.framework.Args"):
        Registry([Plugin("Mine", args=dict, pre_filter=_pre, filter_node=_filter)], "src")  # type: ignore[arg-type]


def test_every_in_tree_plugin_keeps_the_contract():
    registry = in_tree_registry()
    assert "NodeResourcesFit" in registry and registry.source_of("NodeResourcesFit") == "scheduler.plugins"
    assert [name for name, _ in registry.defaults][:3] == ["NodeUnschedulable", "NodeName", "TaintToleration"]


def test_a_registry_is_a_value():
    base = Registry([Plugin("A", pre_filter=_pre, filter_node=_filter)], "a.py")
    more = base.with_plugins([Plugin("B", pre_score=_pre_score, score_node=_score)], "b.py")
    assert list(base) == ["A"] and list(more) == ["A", "B"]
    assert more.source_of("B") == "b.py"


# ------------------------------------------------------------------------------------------ loading

# A plugin of a user's own, not one of kubelab's: nodes must carry the disk type the pod's annotation asks
# for; nodes labelled fast score 100.
USER_PLUGIN = '''
from scheduler.framework import Args, ClusterEvent, Code, Plugin, Status

from .reasons import REASON

NAME = "DiskType"


class DiskTypeArgs(Args):
    label: str = "example.com/disk"


def pre_filter(pod, args):
    wanted = pod.annotations.get("example.com/disk")
    return (args.label, wanted) if wanted else None


def filter_node(state, node):
    label, wanted = state
    return None if node.labels.get(label) == wanted else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), NAME)


def pre_score(pod, args):
    return args


def score_node(args, node):
    return 100 if node.labels.get("example.com/fast") == "true" else 0


PLUGINS = [Plugin(NAME, args=DiskTypeArgs, pre_filter=pre_filter, filter_node=filter_node, pre_score=pre_score,
                  score_node=score_node, requeue_on=ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.NODE_ADDED)]
'''


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """A plugin folder outside the repository, imported afresh for each test."""
    folder = tmp_path / "elsewhere" / "disk_type"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(USER_PLUGIN)
    (folder / "reasons.py").write_text('REASON = "node(s) had the wrong disk type"\n')
    monkeypatch.delitem(sys.modules, "disk_type", raising=False)
    monkeypatch.delitem(sys.modules, "disk_type.reasons", raising=False)
    yield folder
    for name in ("disk_type", "disk_type.reasons"):
        sys.modules.pop(name, None)


def test_a_plugin_from_a_folder_outside_the_repo_schedules(user_folder):
    assert not user_folder.resolve().is_relative_to(REPO)
    registry = load_registry([str(user_folder)], entry_points=False)
    assert registry.source_of("DiskType") == str(user_folder)
    config = parse_config({**HEAD, "profiles": [{
        "schedulerName": "mine",
        "plugins": {"multiPoint": {"enabled": [{"name": "DiskType", "weight": 5}]}},
        "pluginConfig": [{"name": "DiskType", "args": {"label": "disk"}}]}]}, "cfg.yaml", registry)
    profile = build_profiles(config, registry)["mine"]
    nodes = [node("hdd", labels={"disk": "hdd"}), node("ssd-slow", labels={"disk": "ssd"}),
             node("ssd-fast", labels={"disk": "ssd", "example.com/fast": "true"})]
    wants_ssd = pod("p", annotations={"example.com/disk": "ssd"})
    result = profile.schedule(wants_ssd, nodes, random.Random(0))
    assert result.node_name == "ssd-fast"
    assert result.failures["hdd"].reasons == ("node(s) had the wrong disk type",)
    assert result.node_scores("ssd-fast")["DiskType"] == 500
    assert profile.requeue_triggers(result.rejected_by) == ClusterEvent.NODE_LABELS_CHANGED | ClusterEvent.NODE_ADDED


def test_a_plugin_from_a_py_file_and_a_module_name(tmp_path, monkeypatch):
    file = tmp_path / "one_file_plugin.py"
    file.write_text(USER_PLUGIN.replace("from .reasons import REASON", "REASON = 'wrong disk'"))
    monkeypatch.delitem(sys.modules, "one_file_plugin", raising=False)
    assert "DiskType" in load_registry([str(file)], entry_points=False)
    sys.modules.pop("one_file_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_registry(["one_file_plugin"], entry_points=False).source_of("DiskType") == "one_file_plugin"
    sys.modules.pop("one_file_plugin")


def test_a_plugin_from_an_entry_point(user_folder, tmp_path, monkeypatch):
    dist = tmp_path / "disk_type_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: disk-type-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[kubelab.scheduler_plugins]\ndisk = disk_type\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(user_folder.parent))
    registry = load_registry([])
    assert registry.source_of("DiskType") == "entry point disk = disk_type (kubelab.scheduler_plugins)"
    assert "DiskType" not in load_registry([], entry_points=False)


@pytest.mark.parametrize(("write", "source", "message"), [
    (None, "missing_dir/nothing.py", "missing_dir/nothing.py: not found: no such file or folder"),
    (None, "no_such_plugin_module", "no_such_plugin_module: not found: no module 'no_such_plugin_module'"),
    ({"broken.py": "import json\nraise RuntimeError('boom')\n"}, "broken.py",
     "broken.py: import error: RuntimeError: boom (File "),
    ({"syntax.py": "def (:\n"}, "syntax.py", "syntax.py: import error: SyntaxError"),
    ({"deps.py": "import not_installed_dependency\n"}, "deps.py",
     "deps.py: import error: ModuleNotFoundError: No module named 'not_installed_dependency'"),
    ({"nothing.py": "X = 1\n"}, "nothing.py", "nothing.py: declares no PLUGINS"),
    ({"wrong.py": "PLUGINS = ['DiskType']\n"}, "wrong.py",
     "wrong.py: PLUGINS[0]: str 'DiskType' is not a scheduler.framework.Plugin"),
    ({"empty.py": "PLUGINS = []\n"}, "empty.py", "empty.py: PLUGINS: the list is empty"),
    ({"dup.py": "from scheduler.framework import Plugin\nPLUGINS = [Plugin('NodeName', pre_filter=lambda p, a: None)]\n"},
     "dup.py", "dup.py: plugin 'NodeName' is already registered by scheduler.plugins; rename one of them"),
    ({"bad.py": "from scheduler.framework import Plugin\n"
                "PLUGINS = [Plugin('Bad', pre_filter=lambda p, a: p, filter_batch=lambda s, n: None)]\n"},
     "bad.py", "bad.py: plugin 'Bad' is refused:\n  filter_batch without filter_node"),
    ({"nopkg/x.py": "\n"}, "nopkg", "nopkg: not a Python package folder: add an __init__.py"),
])
def test_each_loading_error_names_the_source_and_the_problem(tmp_path, monkeypatch, write, source, message):
    monkeypatch.chdir(tmp_path)
    for name, text in (write or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        monkeypatch.delitem(sys.modules, Path(name).stem, raising=False)
    with pytest.raises(PluginError) as err:
        load_registry([source], entry_points=False)
    assert message in str(err.value)
    for name in write or {}:
        sys.modules.pop(Path(name).stem, None)


def test_two_sources_declaring_one_name_say_where_each_came_from(user_folder, tmp_path):
    other = tmp_path / "other_disk.py"
    other.write_text(USER_PLUGIN.replace("from .reasons import REASON", "REASON = 'x'"))
    try:
        with pytest.raises(PluginError) as err:
            load_registry([str(user_folder), str(other)], entry_points=False)
    finally:
        sys.modules.pop("other_disk", None)
    assert str(err.value) == (f"{other}: plugin 'DiskType' is already registered by {user_folder}; "
                              "rename one of them")


def test_an_unknown_plugin_in_a_config_lists_the_registered_ones(user_folder):
    config = {**HEAD, "profiles": [{"schedulerName": "s", "plugins": {"multiPoint": {"enabled": ["DiskType"]}}}]}
    with pytest.raises(ConfigError) as err:
        parse_config(config, "cfg.yaml")
    assert "plugins.multiPoint.enabled[0]: unknown plugin 'DiskType' (registered: NodeUnschedulable, " in str(err.value)
    assert "load another with --plugins SOURCE" in str(err.value)
    registry = load_registry([str(user_folder)], entry_points=False)
    assert "DiskType" in str(pytest.raises(ConfigError, parse_config, {
        **HEAD, "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": "Typo"}]}]}, "c", registry).value)
    parse_config(config, "cfg.yaml", registry)  # known once loaded


def test_the_cli_refuses_a_bad_plugin_source_before_reading_credentials(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles: [{schedulerName: s}]\n")
    for mode in ([], ["extender"]):
        done = subprocess.run([sys.executable, "-m", "scheduler", *mode, "--config", str(config),
                               "--plugins", str(tmp_path / "absent")], capture_output=True, text=True,
                              cwd=REPO, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert f"error: {tmp_path / 'absent'}: not found: no such file or folder" in done.stderr


def test_the_cli_loads_a_plugin_folder_for_the_config(user_folder, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent("""\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        clientConnection: {kubeconfig: /nonexistent/kubeconfig}
        profiles:
        - schedulerName: s
          plugins: {multiPoint: {enabled: [DiskType]}}
        """))
    without = subprocess.run([sys.executable, "-m", "scheduler", "--config", str(config)],
                             capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert "unknown plugin 'DiskType'" in without.stderr
    loaded = subprocess.run([sys.executable, "-m", "scheduler", "--config", str(config),
                             "--plugins", str(user_folder)], capture_output=True, text=True, cwd=REPO,
                            timeout=60, check=False)
    # Past the plugins and the config: it stops at the credentials it was given.
    assert loaded.returncode == 2 and "/nonexistent/kubeconfig" in loaded.stderr, loaded.stderr
    assert f"plugin DiskType from {user_folder}" in loaded.stderr


def test_the_bundled_examples_are_no_in_tree_plugins_and_load_as_user_plugins():
    assert not {"NetworkAware", "LeastLoaded"} & set(in_tree_registry())
    registry = bundled_plugins.registry()
    assert registry.source_of("NetworkAware") == str(REPO / "plugins" / "network_aware")
    assert registry.source_of("LeastLoaded") == str(REPO / "plugins" / "least_loaded")
    assert "NetworkAware" in load_registry([*bundled_plugins.SOURCES, bundled_plugins.SOURCES[0]],
                                           entry_points=False)  # a source named twice loads once
