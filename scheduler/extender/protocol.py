"""kube-scheduler's extender wire format (k8s.io/kube-scheduler/extender/v1), read and written.

The Go types carry no JSON tags, so the keys are the Go field names. kube-scheduler
(pkg/scheduler/extender.go, HTTPExtender.send) POSTs one JSON document to ``urlPrefix/<verb>`` and treats any
status but 200 as an error:

- ExtenderArgs, the body of filter and prioritize: ``{"Pod": <core/v1 Pod>, "Nodes": <core/v1 NodeList> |
  null, "NodeNames": [names] | null}``. ``NodeNames`` when the extender is configured ``nodeCacheCapable:
  true`` (the extender knows the nodes from its own cache), ``Nodes`` otherwise.
- ExtenderFilterResult: ``{"Nodes", "NodeNames", "FailedNodes": {name: reason},
  "FailedAndUnresolvableNodes": {name: reason}, "Error"}``. kube-scheduler reads ``NodeNames`` back only
  when nodeCacheCapable, else ``Nodes``, so the answer takes the form of the request. A non-empty
  ``Error`` fails the pod's scheduling attempt with that text.
- HostPriorityList, the answer to prioritize: ``[{"Host": name, "Score": 0..10}]`` (MaxExtenderPriority
  10); kube-scheduler adds Score x weight x 10 (MaxNodeScore / MaxExtenderPriority) to its own total.

The body is decoded once, here; nothing downstream sees bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

MAX_EXTENDER_PRIORITY = 10

Obj = dict[str, Any]


class ExtenderArgsError(ValueError):
    """A body that is not ExtenderArgs; the message names the field and what kube-scheduler sends there."""


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """One filter or prioritize request: the pod, and the candidate nodes as names (``node_objects`` is
    None: nodeCacheCapable) or as Node objects aligned with ``names``."""

    pod: Obj
    names: list[str]
    node_objects: list[Obj] | None

    @property
    def by_name(self) -> bool:
        return self.node_objects is None


def parse_args(body: bytes) -> ExtenderArgs:
    """Decode and check an ExtenderArgs body; raises ExtenderArgsError saying what is wrong."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as err:  # also invalid UTF-8
        raise ExtenderArgsError(f"the body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise ExtenderArgsError(f"expected an ExtenderArgs object {{Pod, Nodes | NodeNames}}, got {_kind(data)}")
    # Go's decoder matches field names case-insensitively: a Go extender reads {"pod": ...} too, as
    # kube-scheduler before extender/v1 (json tags "pod", "nodes", "nodenames") sent it.
    fields = {str(key).lower(): value for key, value in data.items()}
    pod = fields.get("pod")
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
        raise ExtenderArgsError("Pod: expected the pod being scheduled (a core/v1 Pod object with metadata)")
    names, node_list = fields.get("nodenames"), fields.get("nodes")
    if names is not None and node_list is not None:
        raise ExtenderArgsError("both NodeNames and Nodes are given; kube-scheduler sends NodeNames when the "
                            "extender is nodeCacheCapable, else Nodes, never both")
    if names is not None:
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:  # decoded JSON: str, never a subclass
            raise ExtenderArgsError(f"NodeNames: expected a list of node names, got {_kind(names)}")
        return ExtenderArgs(pod, names, None)
    if node_list is not None:
        items = node_list.get("items") if isinstance(node_list, dict) else None
        if not isinstance(items, list):
            raise ExtenderArgsError(f"Nodes: expected a core/v1 NodeList {{items: [...]}}, got {_kind(node_list)}")
        return ExtenderArgs(pod, [_node_name(item, i) for i, item in enumerate(items)], items)
    raise ExtenderArgsError("neither NodeNames (nodeCacheCapable: true) nor Nodes (nodeCacheCapable: false) is "
                        "given: there are no candidate nodes")


def _node_name(item: Any, i: int) -> str:
    meta = item.get("metadata") if isinstance(item, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ExtenderArgsError(f"Nodes.items[{i}]: expected a core/v1 Node object with metadata.name")
    return name


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def filter_result(args: ExtenderArgs, passing: Iterable[str], failed: Mapping[str, str],
                  unresolvable: Mapping[str, str]) -> bytes:
    """ExtenderFilterResult in the request's form: names for names, the given Node objects for objects."""
    passing = list(passing)
    result: Obj = {"Nodes": None, "NodeNames": None, "FailedNodes": dict(failed),
                   "FailedAndUnresolvableNodes": dict(unresolvable), "Error": ""}
    if args.node_objects is None:
        result["NodeNames"] = passing
    else:
        objects = dict(zip(args.names, args.node_objects, strict=True))
        result["Nodes"] = {"metadata": {}, "items": [objects[name] for name in passing]}
    return orjson.dumps(result)


def filter_error(message: str) -> bytes:
    """ExtenderFilterResult with Error set: kube-scheduler fails the attempt and reports the message."""
    return orjson.dumps({"Nodes": None, "NodeNames": None, "FailedNodes": None,
                         "FailedAndUnresolvableNodes": None, "Error": message})


def host_priorities(scores: Iterable[tuple[str, int]]) -> bytes:
    """HostPriorityList: one {Host, Score} per node."""
    return orjson.dumps([{"Host": host, "Score": score} for host, score in scores])


def error_body(message: str) -> bytes:
    """The body of a non-200 answer (kube-scheduler reports only the status code; this is for people)."""
    return orjson.dumps({"Error": message})
