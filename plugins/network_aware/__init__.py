"""NetworkAware: pods that ask for the high-speed network run only on nodes labelled for it, and
prefer them when the filter is disabled.

A pod opts in with the annotation ``my-network-preference: high-speed``; only nodes labelled
``network-topology=high-speed`` pass the filter and they score 100 (others 0). The annotation key, label
key and label value are pluginConfig args (annotationKey, labelKey, labelValue). Pods without the
annotation, or with another well-formed value, are unaffected (every node passes and scores 0). A value
that could never be a label value (empty, spaces, over 63 characters) is a mistake in the pod, reported
as a PodSpecError naming the annotation rather than silently ignored.

A bundled example of a plugin of one's own: it lives in its own folder outside the scheduler package, uses
only the public API (``scheduler.framework``, ``scheduler.model``) and is loaded like any user plugin,
``python -m scheduler --plugins plugins/network_aware``; its tests are in ``tests/`` beside it.
"""

from __future__ import annotations

import re

from pydantic import Field

from scheduler.framework import MAX_NODE_SCORE, Args, ClusterEvent, Code, Plugin, Status
from scheduler.model import NodeInfo, PodInfo, PodSpecError

NAME = "NetworkAware"
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class NetworkAwareArgs(Args):
    annotationKey: str = Field("my-network-preference", min_length=1)
    labelKey: str = Field("network-topology", min_length=1)
    labelValue: str = Field("high-speed", pattern=_LABEL_VALUE.pattern)


def reason(args: NetworkAwareArgs) -> str:
    return (f"node(s) didn't have label {args.labelKey}={args.labelValue} "
            f"requested by pod annotation {args.annotationKey}")


def pre_filter(pod: PodInfo, args: NetworkAwareArgs) -> tuple[str, str, Status] | None:
    """The label the pod asks for (and the rejection for nodes without it), or None when it asks for none."""
    value = pod.annotations.get(args.annotationKey)
    if value is None:
        return None
    if not _LABEL_VALUE.match(value):
        raise PodSpecError(
            f"metadata.annotations[{args.annotationKey}]",
            f"{value!r} is not a valid network preference; use {args.labelValue!r} or remove the annotation",
        )
    if value != args.labelValue:
        return None
    return args.labelKey, args.labelValue, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason(args),), NAME)


def filter_node(state: tuple[str, str, Status], node: NodeInfo) -> Status | None:
    key, value, reject = state
    return None if node.labels.get(key) == value else reject


pre_score = pre_filter  # scoring needs the same per-pod state


def score_node(state: tuple[str, str, Status], node: NodeInfo) -> int:
    return MAX_NODE_SCORE if node.labels.get(state[0]) == state[1] else 0


# A node labelled or added, or the pod's annotation changed.
REQUEUE_ON = (ClusterEvent.NODE_ADDED | ClusterEvent.NODE_LABELS_CHANGED
              | ClusterEvent.POD_ANNOTATIONS_CHANGED)

# The one way a plugin module declares its plugins (scheduler.framework.registry).
PLUGINS = [Plugin(NAME, args=NetworkAwareArgs, pre_filter=pre_filter, filter_node=filter_node,
                 pre_score=pre_score, score_node=score_node, requeue_on=REQUEUE_ON)]
