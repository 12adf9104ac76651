"""What a profile may not ask of an extender: kube-scheduler's extender protocol has the verbs filter,
prioritize, preempt and bind, so plugins at PreEnqueue, QueueSort (other than PrioritySort), Reserve, Permit,
PreBind, Bind (other than DefaultBinder), PostBind or PostFilter (other than DefaultPreemption) would never be
called there. Such a profile is refused with the way out: run the scheduler standalone. The plugins kube-scheduler
runs itself before calling an extender (``KUBE_SCHEDULER_DOES``: DynamicResources allocating claims, the volume
plugins), which the extender leaves out, are no problem there.
"""

from __future__ import annotations

from scheduler.config import KubeSchedulerConfiguration
from scheduler.framework import DEFAULT_BINDER, point_named
from scheduler.plugins import KUBE_SCHEDULER_DOES

__all__ = ["extender_problems"]

# The points an extender never reaches, and the in-tree plugin kube-scheduler itself runs there.
_UNREACHED = {"preEnqueue": None, "queueSort": "PrioritySort", "postFilter": None, "reserve": None,
              "permit": None, "preBind": None, "bind": DEFAULT_BINDER, "postBind": None}


def extender_problems(config: KubeSchedulerConfiguration) -> list[str]:
    """One sentence per plugin an extender could not run, naming the profile, the plugin, the point and the fix."""
    problems = []
    for resolved in config.resolved_profiles():
        for key, kube_schedulers in _UNREACHED.items():
            for plugin, _ in resolved.points.get(key, ()):
                if plugin.name == kube_schedulers or plugin.name in KUBE_SCHEDULER_DOES:
                    continue
                problems.append(
                    f"profile {resolved.scheduler_name}: plugin {plugin.name} runs at {point_named(key).title}, "
                    "which kube-scheduler's extender protocol (filter, prioritize, preempt, bind) never calls: "
                    "run the scheduler standalone (scheduler.mode: standalone in the lab definition), or "
                    f"disable {plugin.name} at {key}")
    return problems
