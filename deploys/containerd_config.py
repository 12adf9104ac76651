"""containerd's config for Kubernetes, derived from the installed version's own `containerd config default`.

Regenerating from the defaults (instead of shipping a whole file) keeps every other setting right for the
installed version. Three changes, in both layouts (containerd's docs/cri/config.md):
- SystemdCgroup = true in the runc options (kubelet uses the systemd cgroup driver):
  version 2 (containerd 1.6/1.7): [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  version 3 (containerd 2.x):     [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
- "cri" removed from disabled_plugins (some packages ship it disabled);
- the sandbox (pause) image kubeadm expects, so kubeadm does not warn and no second pause image is pulled:
  version 2: sandbox_image in [plugins."io.containerd.grpc.v1.cri"]
  version 3: sandbox in [plugins.'io.containerd.cri.v1.images'.pinned_images]
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


# Where each config version keeps the sandbox image: (table header, key, TOML path to the key).
SANDBOX_IMAGE = {
    2: ('[plugins."io.containerd.grpc.v1.cri"]', "sandbox_image", ("io.containerd.grpc.v1.cri", "sandbox_image")),
    3: ("[plugins.'io.containerd.cri.v1.images'.pinned_images]", "sandbox",
        ("io.containerd.cri.v1.images", "pinned_images", "sandbox")),
}


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


def _table_body(text: str, header: str) -> tuple[int, int] | None:
    """(start, end) of the lines under `header` up to the next table header."""
    match = re.search(rf"^[ \t]*{re.escape(header)}[ \t]*$", text, re.MULTILINE)
    if not match:
        return None
    following = re.compile(r"^[ \t]*\[", re.MULTILINE).search(text, match.end())
    return match.end(), following.start() if following else len(text)


def _sandbox_image(text: str, version: int, image: str) -> str:
    header, key, _ = SANDBOX_IMAGE[version]
    body = _table_body(text, header)
    if body is None:
        raise ContainerdConfigError(f"containerd's default config (version {version}) has no {header} table for "
                                    "the sandbox image; this containerd version is not supported")
    start, end = body
    section = text[start:end]
    match = re.compile(rf"^([ \t]*){key}[ \t]*=.*$", re.MULTILINE).search(section)
    if match:
        section = f'{section[:match.start()]}{match.group(1)}{key} = "{image}"{section[match.end():]}'
    else:
        header_indent = re.match(r"[ \t]*", text[text.rfind("\n", 0, start) + 1:]).group(0)
        section = f'\n{header_indent}  {key} = "{image}"{section}'
    return text[:start] + section + text[end:]


def sandbox_image(config: dict) -> str | None:
    *tables, key = SANDBOX_IMAGE[config.get("version", 2)][2]
    table = config.get("plugins", {})
    for name in tables:
        table = table.get(name) if isinstance(table, dict) else None
    return table.get(key) if isinstance(table, dict) else None


def runc_options(config: dict) -> dict | None:
    for path in RUNC_OPTIONS_TABLES:
        table = config.get("plugins", {})
        for key in path:
            table = table.get(key) if isinstance(table, dict) else None
        if isinstance(table, dict):
            return table
    return None


def kubernetes_config(default_config: str, pause_image: str | None = None) -> str:
    """The default config with SystemdCgroup on, CRI enabled and, when given, `pause_image` as the sandbox
    image; checked by parsing the result."""
    text = _systemd_cgroup(_enable_cri(default_config))
    version = tomllib.loads(text).get("version", 2)
    if version not in SANDBOX_IMAGE:
        raise ContainerdConfigError(f"containerd's default config has version {version}; kubelab knows versions "
                                    "2 (containerd 1.6/1.7) and 3 (containerd 2.x)")
    if pause_image:
        text = _sandbox_image(text, version, pause_image)
    parsed = tomllib.loads(text)
    if pause_image and sandbox_image(parsed) != pause_image:
        raise ContainerdConfigError(f"could not set containerd's sandbox image to {pause_image}")
    options = runc_options(parsed)
    if not options or options.get("SystemdCgroup") is not True:
        raise ContainerdConfigError("could not set SystemdCgroup = true in containerd's runc options")
    if "cri" in parsed.get("disabled_plugins", []):
        raise ContainerdConfigError("could not remove 'cri' from containerd's disabled_plugins")
    return text
