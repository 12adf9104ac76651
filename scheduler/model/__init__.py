"""Plain hot-path data parsed from the API's JSON dicts: pods, nodes, resources, taints, node affinity.

The scheduler keeps thousands of these in memory, so they are slotted dataclasses built once per watch
event from the camelCase dicts the API sends (never the client's generated models). The object as read is
kept by reference for plugins reading fields not parsed here (``raw``: a read-only view, ``raw.py``),
except for pods counted on nodes, whose objects the cache keeps only when a plugin reads them. Everything
here is pure: no I/O, no clocks, no globals.

One module per seam: ``parsing`` (the parse policy and PodSpecError), ``resources`` (amounts and a pod's
effective request), ``taints`` (taints, tolerations), ``affinity`` (node selectors), ``labels`` (label
selectors), ``pod_affinity`` (inter-pod affinity terms), ``topology_spread`` (spread constraints), ``pod``
(PodInfo), ``node`` (NodeInfo and its accounting), ``raw`` (the object as read, field paths) and
``pod_index`` (counted pods indexed for inter-pod affinity). Import from ``scheduler.model``, or from the seam's module for what only its plugin uses.
"""

from scheduler.model.affinity import NodeSelector, PreferredTerm, Requirement, SelectorTerm
from scheduler.model.node import NodeInfo, NodeTraits
from scheduler.model.parsing import LENIENT, STRICT, ParsePolicy, PodSpecError
from scheduler.model.pod import PodInfo, PodResourceClaim
from scheduler.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resources,
)
from scheduler.model.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
    Taint,
    Toleration,
    is_tolerated,
)

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "LENIENT",
    "MEMORY",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PODS",
    "PREFER_NO_SCHEDULE",
    "STRICT",
    "TAINT_NOT_READY",
    "TAINT_UNREACHABLE",
    "TAINT_UNSCHEDULABLE",
    "NodeInfo",
    "NodeSelector",
    "NodeTraits",
    "ParsePolicy",
    "PodInfo",
    "PodResourceClaim",
    "PodSpecError",
    "PreferredTerm",
    "Requirement",
    "Resources",
    "SelectorTerm",
    "Taint",
    "Toleration",
    "is_tolerated",
]
