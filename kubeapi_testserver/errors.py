"""metav1.Status error bodies, shaped as the real API server sends them.

The shapes and messages follow k8s.io/apimachinery/pkg/api/errors/errors.go (NewNotFound,
NewAlreadyExists, NewConflict, NewResourceExpired, NewForbidden, NewInvalid, NewBadRequest ...) and
the Status reference https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/ :
kind "Status", apiVersion "v1", metadata {}, status "Failure", message, reason, details, code.
"""

from __future__ import annotations

from typing import Any

# StatusReason per HTTP code, as in metav1.StatusReason* (apimachinery/pkg/apis/meta/v1/types.go).
REASON_FOR_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def qualified(resource: str, group: str) -> str:
    """schema.GroupResource.String(): "pods", "leases.coordination.k8s.io"."""
    return f"{resource}.{group}" if group else resource


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def success_body(code: int = 201) -> dict[str, Any]:
    """What BindingREST.Create returns: metav1.Status{Status: Success} (no object), HTTP 201."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def _details(name: str | None, resource: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


class StatusError(Exception):
    """An error answered to the client as a metav1.Status body with an HTTP code."""

    def __init__(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(body["message"])
        self.body = body
        self.code: int = body["code"]
        self.headers = headers or {}

    # Constructors named after apimachinery's errors.NewXxx.
    @classmethod
    def not_found(cls, resource: str, name: str, group: str = "") -> StatusError:
        msg = f'{qualified(resource, group)} "{name}" not found'
        return cls(status_body(404, "NotFound", msg, _details(name, resource, group)))

    @classmethod
    def already_exists(cls, resource: str, name: str, group: str = "") -> StatusError:
        msg = f'{qualified(resource, group)} "{name}" already exists'
        return cls(status_body(409, "AlreadyExists", msg, _details(name, resource, group)))

    @classmethod
    def conflict(cls, resource: str, name: str, cause: str, group: str = "") -> StatusError:
        msg = f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {cause}'
        return cls(status_body(409, "Conflict", msg, _details(name, resource, group)))

    @classmethod
    def precondition_failed(cls, resource: str, name: str, what: str, want: str, have: str,
                            group: str = "") -> StatusError:
        """storage.NewInvalidObjError from checkPreconditions, turned into a Conflict by
        InterpretUpdateError (k8s.io/apiserver/pkg/storage/etcd3/store.go, registry/generic)."""
        return cls.conflict(resource, name,
                            f"Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}",
                            group)

    @classmethod
    def modified(cls, resource: str, name: str, group: str = "") -> StatusError:
        """The optimistic-concurrency conflict (storage.ErrCodeResourceVersionConflicts)."""
        cause = "the object has been modified; please apply your changes to the latest version and try again"
        return cls.conflict(resource, name, cause, group)

    @classmethod
    def expired(cls, message: str) -> StatusError:
        """errors.NewResourceExpired: 410 with reason Expired (too old resourceVersion)."""
        return cls.for_code(410, message, "Expired")

    @classmethod
    def forbidden(cls, resource: str, name: str, cause: str, group: str = "") -> StatusError:
        target = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
        msg = f"{target} is forbidden: {cause}"
        return cls(status_body(403, "Forbidden", msg, _details(name, resource, group)))

    @classmethod
    def invalid(cls, kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> StatusError:
        """errors.NewInvalid; causes are (field, reason type, message) like field.Error."""
        parts = [f"{field}: {message}" for field, _, message in causes]
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        # schema.GroupKind.String(): "Pod", "Event.events.k8s.io", "leases.coordination.k8s.io".
        msg = f'{qualified(kind, group)} "{name}" is invalid: {joined}'
        details: dict[str, Any] = {"name": name, "kind": kind}
        if group:
            details["group"] = group
        details["causes"] = [{"reason": r, "message": m, "field": f} for f, r, m in causes]
        return cls(status_body(422, "Invalid", msg, details))

    @classmethod
    def bad_request(cls, message: str) -> StatusError:
        return cls.for_code(400, message)

    @classmethod
    def method_not_allowed(cls, message: str) -> StatusError:
        return cls.for_code(405, message)

    @classmethod
    def unsupported_media_type(cls, content_type: str) -> StatusError:
        return cls.for_code(415, f"the body of the request was in an unknown format - accepted media types "
                                 f"include: application/json-patch+json, application/merge-patch+json, "
                                 f"application/strategic-merge-patch+json (got {content_type!r})")

    @classmethod
    def internal(cls, message: str) -> StatusError:
        """A plain (non-Status) error inside a REST handler: 500 with an empty reason
        (apiserver/pkg/endpoints/handlers/responsewriters/status.go ErrorToAPIStatus)."""
        return cls.for_code(500, message, "")

    @classmethod
    def unauthorized(cls) -> StatusError:
        return cls.for_code(401, "Unauthorized")

    @classmethod
    def for_code(cls, code: int, message: str | None = None, reason: str | None = None,
                 retry_after: int | None = None) -> StatusError:
        """A Status with `code`'s standard reason unless `reason` is given; also what the test hook
        fail_next answers (its default message names the injection)."""
        reason = reason if reason is not None else REASON_FOR_CODE.get(code, "")
        body = status_body(code, reason, message or f"injected failure ({code} {reason})")
        headers = {}
        if retry_after is not None:
            body["details"] = {"retryAfterSeconds": retry_after}
            headers["Retry-After"] = str(retry_after)
        return cls(body, headers)
