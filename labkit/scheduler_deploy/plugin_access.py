"""The API access the profile's plugins declare, as ClusterRole rules for the scheduler's account.

A plugin names the kinds it reads (``Plugin.watches``: the scheduler lists and watches each) and the kinds or
subresources its binding-cycle points write (``Plugin.writes``). The scheduler gets get/list/watch on the first
and create/update/patch on the second, for the plugins its profile runs, and nothing more (RBAC:
https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.config import KubeSchedulerConfiguration
from scheduler.framework import Plugin, Resource

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch")


@dataclass(frozen=True)
class Rule:
    """One ClusterRole rule, with the plugins that need it (for the comment above it)."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    plugins: tuple[str, ...]


def profile_plugins(config: KubeSchedulerConfiguration, leave_out: frozenset[str] = frozenset()) -> list[Plugin]:
    """Every plugin some profile runs, at any point, once each, in profile order (but those in ``leave_out``)."""
    seen: dict[str, Plugin] = {}
    for profile in config.resolved_profiles():
        runs = [p for p, _ in profile.filters] + [p for p, _, _ in profile.scores]
        runs += [profile.post_filter[0]] if profile.post_filter else []
        runs += [p for entries in profile.points.values() for p, _ in entries]
        for plugin in runs:
            if plugin.name not in leave_out:
                seen.setdefault(plugin.name, plugin)
    return list(seen.values())


def plugin_rules(config: KubeSchedulerConfiguration, leave_out: frozenset[str] = frozenset()) -> list[Rule]:
    """Reads, then writes, one rule per API group, resources sorted: the same declarations render the same.
    ``leave_out``: plugins that do not run here (an extender leaves kube-scheduler's own to kube-scheduler)."""
    rules = []
    for field, verbs, subresource in (("watches", READ_VERBS, False), ("writes", WRITE_VERBS, True)):
        by_group: dict[str, dict[str, set[str]]] = {}
        for plugin in profile_plugins(config, leave_out):
            for text in getattr(plugin, field):
                resource = Resource.parse(text, subresource=subresource)
                name = f"{resource.resource}/{resource.subresource}" if resource.subresource else resource.resource
                by_group.setdefault(resource.group, {}).setdefault(name, set()).add(plugin.name)
        for group in sorted(by_group):
            names = by_group[group]
            plugins = sorted({p for users in names.values() for p in users})
            rules.append(Rule(group, tuple(sorted(names)), verbs, tuple(plugins)))
    return rules
