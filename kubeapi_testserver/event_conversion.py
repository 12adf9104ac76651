"""core/v1 Event <-> events.k8s.io/v1 Event.

Both APIs serve the same stored objects (an event posted through events.k8s.io/v1 is listed by
`kubectl get events` through core/v1). Field mapping from kubernetes/kubernetes
pkg/apis/events/v1/conversion.go and the reference
https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/ :
regarding<->involvedObject, note<->message, reportingController<->reportingComponent,
deprecatedSource<->source, deprecatedFirstTimestamp<->firstTimestamp,
deprecatedLastTimestamp<->lastTimestamp, deprecatedCount<->count; the rest keep their names.
"""

from __future__ import annotations

from typing import Any

# events.k8s.io/v1 name -> core/v1 name
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {core: new for new, core in _RENAMES.items()}


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    out = {_RENAMES.get(k, k): v for k, v in event.items()}
    out["apiVersion"] = "v1"
    out["kind"] = "Event"
    return out


def from_core(event: dict[str, Any]) -> dict[str, Any]:
    # Fields without omitempty in the Go type are always on the wire (event-create.json in the reference).
    out = {"deprecatedSource": {}, "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}
    out.update((_BACK.get(k, k), v) for k, v in event.items())
    out["apiVersion"] = "events.k8s.io/v1"
    out["kind"] = "Event"
    return out
