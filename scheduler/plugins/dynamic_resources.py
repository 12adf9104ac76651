"""DynamicResources, refusing what it cannot do: kube-scheduler's plugin of the same name
(pkg/scheduler/framework/plugins/dynamicresources) allocates a pod's DRA ResourceClaims
(``spec.resourceClaims``) to devices on the chosen node before binding it. This scheduler allocates none,
and a pod bound with unallocated claims never starts, so such a pod is refused in PreFilter, naming the
field and what to do. Unresolvable: no cluster event helps (the field cannot be changed on a pod).

Its PostFilter, which kube-scheduler runs before preemption for a pod no node fits, would free claims
allocated to other pods; for a pod without claims it only says so, and that text is part of every
FailedScheduling message (``post_filter_message``).
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, Plugin, Status, unsupported_status
from scheduler.model import PodInfo

NAME = "DynamicResources"
NO_CLAIMS = "no new claims to deallocate"  # kube-scheduler's PostFilter for a pod without claims
NO_STATE = "not found"  # its PostFilter when its PreFilter never ran: an error, which ends the PostFilters


def pre_filter(pod: PodInfo, args: Args) -> Status | None:
    return unsupported_status(pod, NAME)


def post_filter_message(pre_filter_rejection: Status | None) -> tuple[str, bool]:
    """What kube-scheduler's DynamicResources PostFilter says for a pod no node fits, and whether the
    PostFilter plugins after it (preemption) still run. Its PreFilter, the last one, never ran when an
    earlier plugin's PreFilter refused the pod: the PostFilter then finds no state of its own and fails
    with an error, and preemption does not run (kube-scheduler's RunPostFilterPlugins)."""
    if pre_filter_rejection is not None and pre_filter_rejection.plugin != NAME:
        return NO_STATE, False
    return NO_CLAIMS, True


# Nothing but the pod can change the verdict; NODE_ADDED as every filter declares it.
PLUGIN = Plugin(NAME, pre_filter=pre_filter, post_filter_note=post_filter_message,
                requeue_on=ClusterEvent.POD_UPDATED | ClusterEvent.NODE_ADDED)
