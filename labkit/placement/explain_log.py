"""What the scheduler's own log says about the pods it holds at Permit, read through the API server (pods/log of
the leading replica, as `./lab logs` reads it), to tell whether a pod explain finds would wait at Permit is
really held there.

The scheduler logs one line per pod when it reserves it and holds it at Permit ("pod NS/NAME reserved on NODE,
waiting at Permit for PLUGINS") and one when that ends (bound: "scheduled to"; undone: "not bound to"), each
a line of its own about that pod. So the last line naming a pod is the latest thing the scheduler did with it.
No pod waits at Permit longer than 15 minutes (kube-scheduler's maximum timeout), so the last 15 minutes of
the log are enough. When the log cannot be read (no scheduler pod, no rights to pods/log, a log level above
INFO) nothing is read, and explain's answer stays the what-if, said to be inferred.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.kube import Kube, KubeError
from labkit.placement.explain import Explanation
from labkit.placement.explain_points import WOULD_WAIT
from labkit.scheduler_logs import scheduler_pods
from scheduler.framework.waiting import MAX_PERMIT_WAIT
from scheduler.runtime.client import pod_path

# scheduler/cli.py's format: "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LINE = re.compile(r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:,\d+)? \w+ [\w.]+: pod (?P<key>[^\s:]+):? "
                   r"(?P<what>.*)$")
_LOST_LEASE = "leader election: lost lease"  # scheduler/runtime/leader.py, when it stops leading
_WAITING = re.compile(r"^reserved on (?P<node>\S+), waiting at Permit for (?P<plugins>.+)$")


@dataclass(frozen=True)
class LogWord:
    """The scheduler's last log line about one pod."""

    time: str  # as logged, the scheduler's clock
    what: str  # the line after "pod NS/NAME "
    source: str  # "pod NS/NAME" of the scheduler replica whose log it is
    ended_by_lease: bool = False  # the replica lost its lease after this line (it holds nothing since)

    @property
    def waiting(self) -> tuple[str, str] | None:
        """(node, plugins) when the line says the pod is reserved and held at Permit."""
        found = _WAITING.match(self.what)
        return (found["node"], found["plugins"]) if found else None


def last_words(kube: Kube, lab: Lab) -> tuple[dict[str, LogWord], str | None]:
    """The leading replica's last log line about each pod it named in the last 15 minutes ("ns/name" ->
    LogWord), and why nothing could be read (None when the log was read)."""
    try:
        pods, _no_leader = scheduler_pods(kube, lab)
    except (UserError, KubeError) as err:
        return {}, f"the scheduler's log cannot be read: {err}"
    pod = pods[0]  # the leader first, when one holds the Lease
    meta = pod["metadata"]
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    words: dict[str, LogWord] = {}
    source = f"pod {meta['namespace']}/{meta['name']}"
    try:
        for line in kube.text_lines(pod_path(meta["namespace"], meta["name"], "log"),
                                    container=containers[0] if containers else None,
                                    sinceSeconds=int(MAX_PERMIT_WAIT)):
            if _LOST_LEASE in line:  # it let every pod it held go, unlogged: none is held any more
                words = {key: LogWord(w.time, w.what, w.source, ended_by_lease=True) for key, w in words.items()}
                continue
            found = _LINE.match(line)
            if found:
                words[found["key"]] = LogWord(found["time"], found["what"], source)
    except KubeError as err:
        return {}, f"the scheduler's log ({source}) cannot be read: {err}"
    return words, None


def apply_log(explanation: Explanation, words: dict[str, LogWord], problem: str | None) -> None:
    """Replace explain's inference that the pod waits at Permit with what the scheduler's log says, when it
    names the pod; otherwise say why the inference stands."""
    if explanation.outcome != WOULD_WAIT or explanation.bound_to or not explanation.likely_state:
        return
    word = words.get(explanation.pod)
    if word is None:
        why = problem or "the scheduler's log of the last 15 minutes does not name the pod"
        explanation.notes.append(f"{why}: the Permit wait is inferred")
        return
    said = f"the scheduler's log ({word.source}) at {word.time}: \"pod {explanation.pod} {word.what}\""
    waiting = word.waiting
    if waiting is not None and not word.ended_by_lease:
        node, plugins = waiting
        explanation.likely_state = f"reserved on {node}, waiting at Permit for {plugins}"
        explanation.inferred, explanation.read_from = None, said
    elif waiting is not None:
        explanation.likely_state = "in the scheduler's queue: it lost its lease after reserving the pod"
        explanation.inferred, explanation.read_from = None, said + ", then the lease was lost"
    else:
        explanation.likely_state = "not held at Permit: the scheduler's last word on it is in its log"
        explanation.inferred, explanation.read_from = None, said
