"""`./lab kubeconfig [--merge]`: where the lab's kubeconfig is, and, on request only, the lab's cluster, user
and context merged into the user's own kubeconfig.

The user's file is kubectl's: the first file of $KUBECONFIG, else ~/.kube/config. A merge adds the lab's
entries by name and leaves every other entry (and the current context) as it was; an entry of the same
name with other content (another cluster of that name, or this lab rebuilt with new certificates) is
refused unless forced. The file is backed up (timestamped, beside it) before it is rewritten, and a
re-run with nothing new writes nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.errors import UserError
from labkit.kube import KubeconfigError

SECTIONS = ("clusters", "users", "contexts")


class MergeClash(UserError):
    """An entry of the user's kubeconfig has the lab's name but other content."""


@dataclass
class MergeResult:
    target: Path
    added: list[str] = field(default_factory=list)      # "context schedlab", ...
    replaced: list[str] = field(default_factory=list)   # with --force
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return bool(self.added or self.replaced)


def user_kubeconfig(environ: dict[str, str] | None = None) -> Path:
    """kubectl's file for writes: the first of $KUBECONFIG's files, else ~/.kube/config."""
    environ = os.environ if environ is None else environ
    first = next((p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p), None)
    return Path(first).expanduser() if first else Path(environ.get("HOME", "~")).expanduser() / ".kube" / "config"


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise KubeconfigError(f"{path}: not valid YAML ({err}); fix or move it, then merge again") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(s) or [], list) for s in SECTIONS):
        raise KubeconfigError(f"{path}: not a kubeconfig (clusters, users and contexts must be lists)")
    return data


def merge(lab_kubeconfig: Path, target: Path, force: bool = False,
          clock=time.localtime) -> MergeResult:
    """Merge the lab's clusters, users and contexts into `target` (see the module's docstring)."""
    if not lab_kubeconfig.exists():
        raise KubeconfigError(f"{lab_kubeconfig}: no such kubeconfig; bring the lab up with `./lab up` first")
    lab = _load(lab_kubeconfig)
    existed = target.exists()
    user = _load(target) if existed else {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    result = MergeResult(target)
    clashes = []
    for section in SECTIONS:
        entries = user.setdefault(section, None) or []
        by_name = {entry.get("name"): index for index, entry in enumerate(entries)}
        for entry in lab.get(section) or []:
            label = f"{section[:-1]} {entry['name']}"
            index = by_name.get(entry["name"])
            if index is None:
                entries.append(entry)
                result.added.append(label)
            elif entries[index] != entry:
                clashes.append(label)
                entries[index] = entry
                result.replaced.append(label)
        user[section] = entries
    if clashes and not force:
        raise MergeClash(f"{target} already has {', '.join(clashes)} with other content (another cluster of "
                         "that name, or this lab rebuilt since the last merge); nothing was changed. Replace "
                         "them with --force (a backup is kept), or remove them with `kubectl config "
                         "delete-context/delete-cluster/delete-user`")
    if not result.changed:
        return result
    if not user.get("current-context"):
        user["current-context"] = lab.get("current-context", "")
    if existed:
        result.backup = target.with_name(f"{target.name}.kubelab-backup-{time.strftime('%Y%m%d-%H%M%S', clock())}")
        result.backup.write_bytes(target.read_bytes())
        result.backup.chmod(0o600)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".kubelab-partial")
    partial.touch(mode=0o600)
    partial.write_text(yaml.safe_dump(user, sort_keys=False))
    partial.replace(target)  # whole or not at all: kubectl never reads half a file
    return result
