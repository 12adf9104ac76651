"""The lab's scheduler plugins as the host sees them (`scheduler.plugins` in the lab definition): the plugin
folders to ship in the image and their pinned requirements, the `--plugins` arguments the scheduler gets in
the cluster, and the registry with them loaded, which the profile is validated against on the host.

A folder goes to /opt/kubelab/plugins/<folder name> in the image; a module name is passed as it is (it must
be importable in the image, e.g. installed by a folder's requirements.txt, and on this host). Nothing here
knows any plugin: the registry is whatever the sources declare.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from labdef.errors import UserError
from labdef.lab import Lab, is_folder
from scheduler.config import API_VERSION, ConfigError, KubeSchedulerConfiguration, parse_config
from scheduler.extender.limits import extender_problems
from scheduler.feature_gates import parse_feature_gates
from scheduler.framework import PluginError, Registry, load_registry
from scheduler.plugins import default_plugins

IMAGE_PLUGINS_DIR = "/opt/kubelab/plugins"
REQUIREMENTS_FILE = "requirements.txt"
# One pinned distribution per line: name==version (an environment marker after ';' is allowed).
PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+(\s*;.*)?$")


class PluginFolderError(UserError):
    """A plugin folder cannot be shipped; the message names the file, the line and the fix."""


def folders(lab: Lab) -> list[Path]:
    """The lab's plugin folders, absolute, in the definition's order."""
    return [lab.path(source) for source in lab.scheduler.plugins if is_folder(source)]


def scheduler_args(lab: Lab) -> list[str]:
    """The scheduler's --plugins values in the image: each folder where the image holds it, module names."""
    return [f"{IMAGE_PLUGINS_DIR}/{lab.path(source).name}" if is_folder(source) else source
            for source in lab.scheduler.plugins]


def host_sources(lab: Lab) -> list[str]:
    """The same sources on this host: each folder's path here, module names."""
    return [str(lab.path(source)) if is_folder(source) else source for source in lab.scheduler.plugins]


def requirements(folder: Path) -> list[str]:
    """A folder's requirements.txt as pinned `name==version` lines (none without the file); any other line
    is refused, naming the file and the line, since the image's content tag must say what it installs."""
    path = folder / REQUIREMENTS_FILE
    if not path.is_file():
        return []
    pins = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if not PINNED.match(line):
            raise PluginFolderError(f"{path}:{number}: {line!r} is not pinned; write one distribution per line as "
                                    "name==version (the image installs exactly these, and its tag covers them)")
        pins.append(line)
    return pins


def registry(lab: Lab) -> Registry:
    """The scheduler's plugins with the lab's loaded, as `python -m scheduler --plugins ...` loads them in the
    image: the in-tree ones, the installed entry points, then each of scheduler.plugins. A folder is read
    afresh each time (deploy-scheduler --watch validates every round in one process). A plugin that cannot
    be loaded is refused naming its scheduler.plugins entry. In standalone mode the default plugin set is
    kube-scheduler's under the lab's kubernetes.feature_gates (GangScheduling with GenericWorkload and
    GangScheduling on), as the scheduler takes them on its --feature-gates; an extender keeps the plain set."""
    loaded = load_registry(entry_points=True)
    if lab.scheduler.mode != "extender":
        gates = parse_feature_gates(lab.kubernetes.feature_gates, source="kubernetes.feature_gates")
        loaded = loaded.with_defaults(default_plugins(gates.enabled))
    for i, source in enumerate(host_sources(lab)):
        if is_folder(lab.scheduler.plugins[i]):
            _forget_folder(Path(source).name)
        try:
            loaded = load_registry([source], base=loaded, entry_points=False)
        except PluginError as err:
            raise PluginFolderError(f"scheduler.plugins[{i}]: {err}") from None
        if is_folder(lab.scheduler.plugins[i]):
            _FOLDER_MODULES.add(Path(source).name)
    return loaded


# The package names this process imported plugin folders under (a folder is imported under its name).
_FOLDER_MODULES: set[str] = set()


def _forget_folder(name: str) -> None:
    """Drop a plugin folder this process imported before (and its modules), so the next import reads the
    folder as it is now; modules it did not import from a plugin folder are never touched."""
    if name not in _FOLDER_MODULES:
        return
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def validate_profile(lab: Lab, plugins: Registry) -> KubeSchedulerConfiguration:
    """scheduler.profile checked against `plugins` (plugin names, weights, args) as the scheduler will check
    it, with each problem named by its lab definition field; standalone, also how many plugins a point takes
    (one QueueSort, a Bind), which the scheduler checks at start. Returns the parsed configuration."""
    profile = {"schedulerName": lab.scheduler.name, **lab.scheduler.profile.fragment()}
    try:
        config = parse_config({"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration",
                               "profiles": [profile]}, "scheduler.profile", plugins)
    except ConfigError as err:
        raise _profile_error(str(err).split("\n")[1:]) from None
    problems = config.point_problems() if lab.scheduler.mode == "standalone" else []
    if problems:
        raise _profile_error(problems)
    return config


def _profile_error(lines: list[str]) -> ProfileError:
    fields = [line.strip().replace("profiles[0].", "scheduler.profile.", 1).replace(
        "profiles[0]: ", "scheduler.profile: ", 1).replace(  # the scheduler's own hint, in the lab's words
        "load another with --plugins SOURCE", "add its folder or module to scheduler.plugins") for line in lines]
    return ProfileError("scheduler.profile does not fit the scheduler's plugins (with scheduler.plugins "
                        "loaded):\n" + "\n".join(f"  - {f}" for f in fields))


class ProfileError(UserError):
    """The lab's scheduler.profile names a plugin, weight or arg the scheduler's plugins refuse."""


class ExtenderModeError(UserError):
    """In extender mode, scheduler.profile runs plugins at points kube-scheduler never asks an extender about."""


def check_extender_mode(lab: Lab, config: KubeSchedulerConfiguration) -> None:
    """In extender mode (scheduler.mode: extender), refuse a profile whose plugins need points the extender
    protocol (filter, prioritize, preempt, bind) never reaches, such as Reserve or Permit, naming each plugin,
    its point and the way out (standalone mode)."""
    if lab.scheduler.mode != "extender":
        return
    problems = extender_problems(config)
    if problems:
        raise ExtenderModeError("scheduler.mode is extender, but scheduler.profile needs extension points an "
                                "extender is never called at:\n" + "\n".join(f"  - {p}" for p in problems))


def checked_registry(lab: Lab) -> Registry:
    """The lab's plugins loaded, its profile validated against them and, in extender mode, refused when it
    needs points an extender never reaches: what deploy-scheduler and doctor start from. Raises a UserError
    naming the field."""
    plugins = registry(lab)
    check_extender_mode(lab, validate_profile(lab, plugins))
    return plugins
