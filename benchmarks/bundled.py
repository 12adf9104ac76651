"""The bundled example plugins the benchmark rows enable (LeastLoaded, NetworkAware): folders at the
repository root, loaded as a user's plugins are (`python -m scheduler --plugins FOLDER`, load_registry)."""

from __future__ import annotations

from pathlib import Path

from scheduler.framework import Registry, load_registry

REPO = Path(__file__).resolve().parents[1]
SOURCES = (str(REPO / "plugins" / "network_aware"), str(REPO / "plugins" / "least_loaded"))
CLI_ARGS = tuple(arg for source in SOURCES for arg in ("--plugins", source))


def registry() -> Registry:
    """The in-tree plugins and the two bundled examples."""
    return load_registry(SOURCES, entry_points=False)
