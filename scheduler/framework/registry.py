"""The plugin registry as a value, and loading user plugins into it.

A ``Registry`` maps plugin names to ``Plugin`` descriptors, remembers where each came from, and carries the
default plugin set a profile runs when its config changes nothing (kube-scheduler's default plugins). It is
immutable: ``with_plugins`` returns a new one. Config parsing and profile building take it as an argument
(kube-scheduler's ``NewFramework(registry, ...)``), so the framework and the config know no plugin.

Plugins are declared the one way kopf-style loaders expect: a module-level ``PLUGINS`` sequence of ``Plugin``
descriptors. ``load_registry`` starts from the in-tree plugins and adds, in order:
- the ``kubelab.scheduler_plugins`` entry-point group of the installed distributions (an entry point names a
  module declaring ``PLUGINS``, or the sequence itself: ``my_pkg.plugins:PLUGINS``);
- each SOURCE given: a dotted module name on sys.path (``my_pkg.my_plugin``), a ``.py`` file, or a package
  folder (holding ``__init__.py``; it is imported under its folder name, so its own modules import as
  ``from . import x``). ``python -m scheduler --plugins SOURCE`` passes them here.
Any problem raises ``PluginError`` naming the source and what is wrong; registering a plugin also checks its
descriptor (``contracts.contract_problems``).

The in-tree plugins are the default base, found by the package name ``IN_TREE`` and loaded as any source is:
nothing in the framework imports them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from scheduler.framework.contracts import contract_problems
from scheduler.framework.plugin import Plugin

__all__ = ["ENTRY_POINT_GROUP", "IN_TREE", "PluginError", "Registry", "in_tree_registry", "load_registry"]

ENTRY_POINT_GROUP = "kubelab.scheduler_plugins"
# The package of kube-scheduler's in-tree plugins; it declares PLUGINS and DEFAULT_PLUGINS.
IN_TREE = "scheduler.plugins"


class PluginError(ValueError):
    """A plugin source cannot be loaded or a plugin cannot be registered; the message names the source."""


class Registry(Mapping[str, Plugin]):
    """Plugins by name, with the source each came from and the default plugin set (``defaults``: the
    multiPoint default, in order, as (name, score weight; 0 for a plugin that does not score there))."""

    __slots__ = ("_plugins", "_sources", "defaults")

    def __init__(self, plugins: Iterable[Plugin] = (), source: str = "", *,
                 defaults: Sequence[tuple[str, int]] = ()) -> None:
        self._plugins: dict[str, Plugin] = {}
        self._sources: dict[str, str] = {}
        for plugin in plugins:
            self._add(plugin, source)
        unknown = [name for name, _ in defaults if name not in self._plugins]
        if unknown:
            raise PluginError(f"{source or 'registry'}: default plugins {', '.join(unknown)} are not registered")
        self.defaults: tuple[tuple[str, int], ...] = tuple(defaults)

    def _add(self, plugin: Any, source: str) -> None:
        where = source or "registry"
        if not isinstance(plugin, Plugin):
            raise PluginError(f"{where}: {plugin!r} is not a scheduler.framework.Plugin")
        problems = contract_problems(plugin)
        if problems:
            raise PluginError(f"{where}: plugin {plugin.name!r} is refused:\n  " + "\n  ".join(problems))
        if plugin.name in self._plugins:
            raise PluginError(f"{where}: plugin {plugin.name!r} is already registered by "
                              f"{self._sources[plugin.name] or 'the registry'}; rename one of them")
        self._plugins[plugin.name] = plugin
        self._sources[plugin.name] = source

    def with_plugins(self, plugins: Iterable[Plugin], source: str) -> Registry:
        """A new registry: this one's plugins and defaults, then ``plugins`` from ``source``."""
        registry = Registry.__new__(Registry)
        registry._plugins, registry._sources = dict(self._plugins), dict(self._sources)
        registry.defaults = self.defaults
        for plugin in plugins:
            registry._add(plugin, source)
        return registry

    def with_defaults(self, defaults: Sequence[tuple[str, int]]) -> Registry:
        """A new registry: this one's plugins with ``defaults`` as the multiPoint default (the feature gates
        change kube-scheduler's). Raises PluginError naming a default that is not registered."""
        unknown = [name for name, _ in defaults if name not in self._plugins]
        if unknown:
            raise PluginError(f"default plugins {', '.join(unknown)} are not registered")
        registry = self.with_plugins((), "")
        registry.defaults = tuple(defaults)
        return registry

    def source_of(self, name: str) -> str:
        """Where the plugin ``name`` was loaded from (a module, file, folder or entry point)."""
        return self._sources[name]

    def known(self) -> str:
        """The registered names, for error messages."""
        return ", ".join(self._plugins) or "none"

    def __getitem__(self, name: str) -> Plugin:
        return self._plugins[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)

    def __repr__(self) -> str:
        return f"Registry({self.known()})"


@functools.cache
def in_tree_registry() -> Registry:
    """kube-scheduler's in-tree plugins and default plugin set (the package ``IN_TREE``)."""
    module = _import_module(IN_TREE)
    return Registry(declared_plugins(module, IN_TREE), IN_TREE, defaults=module.DEFAULT_PLUGINS)


def load_registry(sources: Sequence[str] = (), *, base: Registry | None = None,
                  entry_points: bool = True) -> Registry:
    """``base`` (default: the in-tree plugins) plus the plugins of the ``kubelab.scheduler_plugins`` entry
    points (unless ``entry_points`` is false) and of each source, in order. Raises PluginError."""
    registry = base if base is not None else in_tree_registry()
    if entry_points:
        for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            where = f"entry point {entry.name} = {entry.value} ({ENTRY_POINT_GROUP})"
            try:
                declared = entry.load()
            except Exception as err:
                raise PluginError(f"{where}: import error: {_first_line(err)}") from err
            if isinstance(declared, ModuleType):
                declared = declared_plugins(declared, where)
            registry = registry.with_plugins(_plugin_list(declared, where), where)
    loaded: set[str] = set()
    for source in sources:
        module = import_source(source)
        if module.__name__ in loaded:  # the same module named twice (a path and its alias): loaded once
            continue
        loaded.add(module.__name__)
        registry = registry.with_plugins(declared_plugins(module, source), source)
    return registry


def declared_plugins(module: ModuleType, source: str) -> list[Plugin]:
    """The ``PLUGINS`` a module declares. Raises PluginError."""
    declared = getattr(module, "PLUGINS", None)
    if declared is None:
        raise PluginError(f"{source}: declares no PLUGINS; add at module level "
                          "PLUGINS = [Plugin(name=..., ...)] (scheduler.framework.Plugin)")
    return _plugin_list(declared, f"{source}: PLUGINS")


def _plugin_list(declared: Any, where: str) -> list[Plugin]:
    if isinstance(declared, Plugin):
        return [declared]
    if isinstance(declared, (str, bytes, Mapping)) or not isinstance(declared, Iterable):
        raise PluginError(f"{where}: expected a list of scheduler.framework.Plugin, got {type(declared).__name__}")
    plugins = list(declared)
    if not plugins:
        raise PluginError(f"{where}: the list is empty; list the module's Plugin descriptors")
    for i, plugin in enumerate(plugins):
        if not isinstance(plugin, Plugin):
            raise PluginError(f"{where}[{i}]: {type(plugin).__name__} {plugin!r} is not a scheduler.framework.Plugin")
    return plugins


def import_source(source: str) -> ModuleType:
    """The module a SOURCE names: a ``.py`` file, a package folder, or a dotted module name. Raises
    PluginError."""
    path = Path(source)
    if source.endswith(".py") or "/" in source or "\\" in source or path.exists():
        return _import_path(source, path)
    return _import_module(source)


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(f"{err.name}.")):
            raise PluginError(f"{name}: not found: no module {err.name!r} on sys.path (give a module name, "
                              "a .py file or a package folder)") from None
        raise PluginError(f"{name}: import error: {_first_line(err)}") from err
    except Exception as err:
        raise PluginError(f"{name}: import error: {_first_line(err)}") from err


def _import_path(source: str, path: Path) -> ModuleType:
    """Import a .py file under its stem, or a package folder under its name (so relative imports work)."""
    if not path.exists():
        raise PluginError(f"{source}: not found: no such file or folder")
    if path.is_dir():
        init = path / "__init__.py"
        if not init.is_file():
            raise PluginError(f"{source}: not a Python package folder: add an __init__.py declaring PLUGINS")
        name, file, search = path.resolve().name, init, [str(path.resolve())]
    elif path.suffix == ".py":
        name, file, search = path.stem, path, None
    else:
        raise PluginError(f"{source}: not a .py file or a package folder")
    file = file.resolve()
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == file:
            return loaded
        raise PluginError(f"{source}: a module named {name!r} is already loaded from "
                          f"{getattr(loaded, '__file__', None) or 'elsewhere'}; rename the folder or file")
    spec = importlib.util.spec_from_file_location(name, file, submodule_search_locations=search)
    assert spec is not None and spec.loader is not None  # a .py file always has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise PluginError(f"{source}: import error: {_first_line(err)}") from err
    return module


def _first_line(err: BaseException) -> str:
    """The exception and where the user's code raised it: its innermost traceback frame."""
    frames = traceback.extract_tb(err.__traceback__)
    message = f"{type(err).__name__}: {err}".splitlines()[0]
    if isinstance(err, SyntaxError) and err.filename:
        return f"{message} ({err.filename}, line {err.lineno})"
    if frames:
        frame = frames[-1]
        return f'{message} (File "{frame.filename}", line {frame.lineno})'
    return message
