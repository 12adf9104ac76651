"""The bundled example plugins (plugins/network_aware, plugins/least_loaded), loaded as a user's plugins are:
for the tests whose configurations enable NetworkAware or LeastLoaded."""

from __future__ import annotations

import functools
from pathlib import Path

from scheduler.framework import Registry, load_registry

REPO = Path(__file__).resolve().parents[1]
SOURCES = (str(REPO / "plugins" / "network_aware"), str(REPO / "plugins" / "least_loaded"))
# What `python -m scheduler` (and its extender mode) is given to load them.
CLI_ARGS = tuple(arg for source in SOURCES for arg in ("--plugins", source))


@functools.cache
def registry() -> Registry:
    """The in-tree plugins plus the two bundled examples."""
    return load_registry(SOURCES, entry_points=False)
