"""containerd's config for Kubernetes, derived from the installed version's own `containerd config default`.

Regenerating from the defaults (instead of shipping a whole file) keeps every other setting right for the
installed version. Two changes, in both layouts:
- config version 2 (containerd 1.6/1.7): [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
- config version 3 (containerd 2.x):    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
SystemdCgroup = true in the runc options (kubelet uses the systemd cgroup driver), and "cri" removed from
disabled_plugins (some packages ship it disabled).
"""

from __future__ import annotations

import re
import tomllib

RUNC_OPTIONS_TABLES = (
    ("io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc", "options"),  # version 2
    ("io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc", "options"),  # version 3
)
_RUNC_OPTIONS_HEADER = re.compile(
    r"""^([ \t]*)\[plugins\.["']io\.containerd\.(?:grpc\.v1\.cri|cri\.v1\.runtime)["']"""
    r"""\.containerd\.runtimes\.runc\.options\][ \t]*$""",
    re.MULTILINE,
)
_SYSTEMD_CGROUP_ON = re.compile(r"^[ \t]*SystemdCgroup[ \t]*=[ \t]*true[ \t]*$", re.MULTILINE)
_SYSTEMD_CGROUP = re.compile(r"^([ \t]*)SystemdCgroup[ \t]*=[ \t]*false[ \t]*$", re.MULTILINE)
_DISABLED_PLUGINS = re.compile(r"^([ \t]*disabled_plugins[ \t]*=[ \t]*)\[(.*?)\]", re.MULTILINE | re.DOTALL)


class ContainerdConfigError(ValueError):
    pass


def _enable_cri(text: str) -> str:
    def drop_cri(match: re.Match) -> str:
        items = [item.strip() for item in match.group(2).split(",") if item.strip()]
        kept = [item for item in items if item.strip("\"'") != "cri"]
        return f"{match.group(1)}[{', '.join(kept)}]"

    return _DISABLED_PLUGINS.sub(drop_cri, text)


def _systemd_cgroup(text: str) -> str:
    text, replaced = _SYSTEMD_CGROUP.subn(r"\1SystemdCgroup = true", text)
    if replaced or _SYSTEMD_CGROUP_ON.search(text):
        return text
    match = _RUNC_OPTIONS_HEADER.search(text)
    if not match:
        raise ContainerdConfigError(
            "containerd's default config has no runc options table; this containerd version is not "
            "supported (set containerd.package/version in the lab definition to a 1.6+ release)"
        )
    indent = match.group(1) + "  "
    return text[: match.end()] + f"\n{indent}SystemdCgroup = true" + text[match.end():]


def runc_options(config: dict) -> dict | None:
    for path in RUNC_OPTIONS_TABLES:
        table = config.get("plugins", {})
        for key in path:
            table = table.get(key) if isinstance(table, dict) else None
        if isinstance(table, dict):
            return table
    return None


def kubernetes_config(default_config: str) -> str:
    """The default config with SystemdCgroup on and CRI enabled; checked by parsing the result."""
    text = _systemd_cgroup(_enable_cri(default_config))
    parsed = tomllib.loads(text)
    options = runc_options(parsed)
    if not options or options.get("SystemdCgroup") is not True:
        raise ContainerdConfigError("could not set SystemdCgroup = true in containerd's runc options")
    if "cri" in parsed.get("disabled_plugins", []):
        raise ContainerdConfigError("could not remove 'cri' from containerd's disabled_plugins")
    return text
