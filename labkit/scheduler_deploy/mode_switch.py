"""After `scheduler.mode` changed: delete what the other mode applied and this one does not.

Those objects are the ones the other mode's templates render for this lab (RBAC, as both modes name their
ServiceAccount, ConfigMap, Deployment and leader-election Role alike, and apply has just taken those over).
Each is deleted only when it exists and carries every label our manifests put on the scheduler's objects
(common_labels: managed by kubelab, this scheduler's name as instance); anything else of that name is left
alone, and said so. It runs after the rollout, so the old mode's pods are gone before their permissions.
"""

from __future__ import annotations

from typing import Any

from labdef.lab import Lab
from labkit.console import Echo
from labkit.kube import Kube
from labkit.scheduler_deploy.apply import describe, object_path
from labkit.scheduler_deploy.manifests import common_labels, render_manifests


def in_other_mode(lab: Lab) -> Lab:
    mode = "extender" if lab.scheduler.mode == "standalone" else "standalone"
    return lab.model_copy(update={"scheduler": lab.scheduler.model_copy(update={"mode": mode})})


def objects(lab: Lab, image: str) -> list[dict[str, Any]]:
    return [obj for manifest in render_manifests(lab, image) for obj in manifest.objects]


def remove_other_mode(kube: Kube, lab: Lab, image: str, echo: Echo = print) -> list[str]:
    """Delete the other mode's objects that are ours and that this mode does not apply; returns describe() of
    each object deleted."""
    keep = {object_path(obj) for obj in objects(lab, image)}
    other, ours = in_other_mode(lab), common_labels(lab)
    removed = []
    for obj in objects(other, image):
        path = object_path(obj)
        existing = None if path in keep else kube.get_or_none(path)
        if existing is None:
            continue
        labels = existing["metadata"].get("labels") or {}
        if any(labels.get(key) != value for key, value in ours.items()):
            echo(f"{describe(obj)} kept: {other.scheduler.mode} mode names it too, but it is not labelled as "
                 f"{lab.scheduler.name}'s ({', '.join(f'{k}={v}' for k, v in ours.items())})")
            continue
        kube.delete(path)
        echo(f"{describe(obj)} deleted: {other.scheduler.mode} mode's, and this lab deploys {lab.scheduler.mode} mode")
        removed.append(describe(obj))
    return removed
