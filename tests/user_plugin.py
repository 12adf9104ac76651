"""A user's own plugin folder, written where a test wants it (outside the repository): DiskType, which no
kubelab file names. Pods annotated ``example.com/disk: <type>`` go only to nodes labelled
``example.com/disk=<type>`` (args: annotationKey, labelKey) and prefer them when the filter is disabled."""

from __future__ import annotations

from pathlib import Path

NAME = "DiskType"
REASON = "node(s) didn't have the disk the pod asks for"

SOURCE = '''"""DiskType: a pod asking for a disk type runs on nodes offering it."""
from scheduler.framework import MAX_NODE_SCORE, Args, Code, Plugin, Status

from .labels import wanted


class DiskTypeArgs(Args):
    annotationKey: str = "example.com/disk"
    labelKey: str = "example.com/disk"


def pre_filter(pod, args):
    want = wanted(pod, args.annotationKey)
    if want is None:
        return None
    return args.labelKey, want, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("REASON",), "DiskType")


def filter_node(state, node):
    key, want, reject = state
    return None if node.labels.get(key) == want else reject


def score_node(state, node):
    return MAX_NODE_SCORE if node.labels.get(state[0]) == state[1] else 0


PLUGINS = [Plugin("DiskType", args=DiskTypeArgs, pre_filter=pre_filter, filter_node=filter_node,
                  pre_score=pre_filter, score_node=score_node)]
'''.replace("REASON", REASON)

HELPER = '''def wanted(pod, key):
    return pod.annotations.get(key)
'''


def write_plugin(folder: Path) -> Path:
    """The plugin as a package folder (a relative import included, as a user's would have)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(SOURCE)
    (folder / "labels.py").write_text(HELPER)
    return folder


def profile(label_key: str = "example.com/disk") -> dict:
    """A scheduler.profile enabling DiskType with its args."""
    return {"plugins": {"multiPoint": {"enabled": [{"name": NAME, "weight": 2}]}},
            "pluginConfig": [{"name": NAME, "args": {"annotationKey": "example.com/disk", "labelKey": label_key}}]}
