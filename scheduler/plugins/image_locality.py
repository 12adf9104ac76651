"""ImageLocality: prefer nodes that already hold the pod's container images, weighted by image size and
discounted for images that most nodes hold (kube-scheduler's imagelocality/image_locality.go).

Per node: the sum, over the pod's init containers and containers whose image the node lists in
``status.images``, of ``sizeBytes x (nodes holding the image / all nodes)``; the sum is clamped to
[23 MiB, 1000 MiB x number of containers] and mapped linearly onto 0..100. No normalisation step.

Image names are matched as kube-scheduler matches them: a name without a tag gets ``:latest``; nothing else
is rewritten, so ``nginx`` in a pod does not match ``docker.io/library/nginx:latest`` on a node (upstream
leaves that case open too: users who name images the way the kubelet reports them get the score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.framework import MAX_NODE_SCORE, Args, ClusterView, Plugin
from scheduler.model import NodeInfo, PodInfo

NAME = "ImageLocality"
MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB


def normalized_image_name(name: str) -> str:
    """``name:latest`` when the name has no tag (no ':' after the last '/'), else the name unchanged."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


@dataclass(frozen=True, slots=True)
class _Images:
    names: tuple[str, ...]  # normalised, one per container (repeats kept: each container counts)
    spread: dict[str, float]  # image -> nodes holding it / all nodes
    max_threshold: int


def pre_score(pod: PodInfo, args: Args, cluster: ClusterView, feasible: Sequence[NodeInfo]) -> _Images | None:
    if not cluster.traits.with_images:
        return None  # no node lists an image: every node scores 0
    names = tuple(normalized_image_name(image) for image in pod.images)
    wanted = set(names)
    # Counting holders costs a pass over every node: only pay it for images some scored node holds.
    held = {name for node in feasible if node.images for name in wanted if name in node.images}
    if not held:
        return None
    nodes = cluster.nodes
    spread = {name: sum(1 for node in nodes if name in node.images) / len(nodes) for name in held}
    return _Images(names, spread, MAX_CONTAINER_THRESHOLD * len(names))


def score_node(images: _Images, node: NodeInfo) -> int:
    held = node.images
    total = 0
    for name in images.names:
        size = held.get(name)
        if size is not None:
            total += int(size * images.spread.get(name, 0.0))
    total = min(max(total, MIN_THRESHOLD), images.max_threshold)
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (images.max_threshold - MIN_THRESHOLD)


PLUGIN = Plugin(NAME, pre_score=pre_score, score_node=score_node, reads_cluster=True)
