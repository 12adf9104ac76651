"""DynamicResources, refusing what it cannot do: kube-scheduler's plugin of the same name
(pkg/scheduler/framework/plugins/dynamicresources) allocates a pod's DRA ResourceClaims
(``spec.resourceClaims``) to devices on the chosen node before binding it. This scheduler allocates none,
and a pod bound with unallocated claims never starts, so such a pod is refused in PreFilter, naming the
field and what to do. Unresolvable: no cluster event helps (the field cannot be changed on a pod).
"""

from __future__ import annotations

from scheduler.framework import Args, ClusterEvent, Plugin, Status, unsupported_status
from scheduler.model import PodInfo

NAME = "DynamicResources"


def pre_filter(pod: PodInfo, args: Args) -> Status | None:
    return unsupported_status(pod, NAME)



# Nothing but the pod can change the verdict; NODE_ADDED as every filter declares it.
PLUGIN = Plugin(NAME, pre_filter=pre_filter, requeue_on=ClusterEvent.POD_UPDATED | ClusterEvent.NODE_ADDED)
