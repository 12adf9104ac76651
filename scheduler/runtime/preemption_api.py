"""Acting on a preemption decision (kube-scheduler's prepareCandidate, synchronous as before its async
preemption): the API writes, in kube-scheduler's order.

For each victim not already being deleted: the DisruptionTarget condition (reason PreemptionByScheduler,
"<scheduler>: preempting to accommodate a higher priority pod"), then a DELETE with no options (the pod's
own grace period), then a Preempted event. A victim already gone counts as done. Then the pods of lower
priority nominated to the node lose their nomination (the room is no longer theirs), and the preemptor is
nominated: in memory at once, and in its status.nominatedNodeName. Pods: delete and pods/status patch.

Every write names the pod it is about by UID (the patches carry metadata.uid, the DELETE a UID
precondition), so none lands on a pod re-created under the same name. A refused write is judged by the pod
as it now is (scheduler.runtime.pod_state): a victim gone or replaced counts as evicted, anything else
fails the preemption, which is retried with backoff.
"""

from __future__ import annotations

import logging
import time

from scheduler.framework.preemption import Outcome
from scheduler.model import PodInfo
from scheduler.model.pod import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from scheduler.runtime.client import ApiError, Client, pod_path
from scheduler.runtime.events import EventRecorder
from scheduler.runtime.nominator import Nominator
from scheduler.runtime.pod_state import PodStanding, delete_options, read_state, uid_guard, write_about

log = logging.getLogger(__name__)


class PreemptionApi:
    def __init__(self, client: Client, recorder: EventRecorder, nominator: Nominator) -> None:
        self.client = client
        self.recorder = recorder
        self.nominator = nominator

    def carry_out(self, pod: PodInfo, outcome: Outcome, scheduler_name: str) -> None:
        """Evict the victims and nominate ``pod`` to the chosen node. Raises ApiError when a victim could not
        be evicted (the pod is then retried with backoff, as kube-scheduler does)."""
        node = outcome.node
        assert node is not None
        for victim in outcome.victims:
            if victim.deletion_timestamp:
                continue  # graceful deletion already started: nothing to send
            if self._evict(victim, scheduler_name):
                log.info("pod %s preempted %s on %s", pod.key, victim.key, node)
                self.recorder.preempted(victim, pod, node, scheduler_name)
        for other in self.nominator.lower_priority_on(node, pod.priority):
            self.nominator.remove(other.uid)
            self._set_nominated_node(other, None)
        self.nominator.nominate(pod, node)
        self._set_nominated_node(pod, node)

    def clear_nomination(self, pod: PodInfo) -> None:
        """Preemption found no node: the pod's nomination, if any, no longer holds."""
        if self.nominator.node_of(pod.uid) is None and not pod.nominated_node_name:
            return
        self.nominator.remove(pod.uid)
        self._set_nominated_node(pod, None)

    def _evict(self, victim: PodInfo, scheduler_name: str) -> bool:
        """Condition, then delete; False when the victim was already gone."""
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                     "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
                     "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        path = pod_path(victim.namespace, victim.name)
        try:
            self.client.patch(f"{path}/status", uid_guard(victim, {"status": {"conditions": [condition]}}))
            self.client.request("DELETE", path, body=delete_options(victim))
        except ApiError as err:
            if err.status == 404 or read_state(self.client, victim) is PodStanding.GONE:
                return False
            raise
        return True

    def _set_nominated_node(self, pod: PodInfo, node: str | None) -> None:
        """status.nominatedNodeName (None clears it); a pod gone meanwhile needs none."""
        def patch() -> None:
            self.client.patch(pod_path(pod.namespace, pod.name, "status"),
                              uid_guard(pod, {"status": {"nominatedNodeName": node}}))

        try:
            write_about(self.client, pod, patch)
        except ApiError as err:
            log.warning("pod %s: nominatedNodeName not written: %s", pod.key, err)
