"""What the test server records of each request, for assertions on what a client did."""

from __future__ import annotations

from dataclasses import dataclass

from kubeapi_testserver.routes import Route

__all__ = ["RequestRecord"]


@dataclass(slots=True)
class RequestRecord:
    """One request as the server saw it (for assertions on what a client did)."""

    method: str
    path: str
    verb: str = ""
    resource: str = ""  # "pods", "pods/binding", "leases", ...
    group: str = ""
    namespace: str = ""
    name: str = ""
    code: int = 0

    def describe(self, verb: str, route: Route) -> None:
        self.verb = verb
        self.resource = route.resource_label
        self.group = route.rtype.group if route.rtype else ""
        self.namespace = route.namespace
        self.name = route.name or ""

    def finish(self, code: int) -> None:
        self.code = code
