"""Kubernetes-shaped errors: every failure leaves the server as a ``Status`` object.

Clients (the official Python client, kubectl, ovnk's own ``kube.errors``)
dispatch on ``reason`` and ``code`` and show ``message`` to people, so the
message formats here copy the real API server's (``pods "x" not found``,
``Operation cannot be fulfilled on ...``, ``Kind.group "x" is invalid: ...``).
``FieldError`` renders one field problem the way apimachinery's
``field.Error`` does, for schema validation and admission hooks alike; it and Go's
quoting are the core's (``ovnk_core.admission.contract``, shared with ovnk's admission
rules), re-exported here.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.contract import OMIT, FieldError, go_quote, go_value

JSON = dict[str, Any]

class ApiStatusError(Exception):
    """A failed request; ``status()`` is the body the client receives."""

    def __init__(self, code: int, reason: str, message: str,
                 details: JSON | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JSON:
        """The ``Status`` body sent to the client."""
        body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Failure", "message": self.message, "reason": self.reason,
                      "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified_resource(group: str, plural: str) -> str:
    """``pods`` or ``userdefinednetworks.k8s.ovn.org`` (a GroupResource's string)."""
    return f"{plural}.{group}" if group else plural


def qualified_kind(group: str, kind: str) -> str:
    """``Pod`` or ``UserDefinedNetwork.k8s.ovn.org`` (a GroupKind's string)."""
    return f"{kind}.{group}" if group else kind


def _details(name: str, group: str, kind: str) -> JSON:
    details: JSON = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(group: str, plural: str, name: str) -> ApiStatusError:
    """404 ``<resource> "<name>" not found``."""
    return ApiStatusError(404, "NotFound",
                          f"{qualified_resource(group, plural)} {go_quote(name)} not found",
                          _details(name, group, plural))


def already_exists(group: str, plural: str, name: str) -> ApiStatusError:
    """409 ``<resource> "<name>" already exists``."""
    return ApiStatusError(409, "AlreadyExists",
                          f"{qualified_resource(group, plural)} {go_quote(name)} already exists",
                          _details(name, group, plural))


MODIFIED = ("the object has been modified; please apply your changes to the latest "
            "version and try again")


def conflict(group: str, plural: str, name: str, detail: str = MODIFIED) -> ApiStatusError:
    """409 ``Operation cannot be fulfilled on <resource> "<name>": <detail>``."""
    return ApiStatusError(
        409, "Conflict",
        f"Operation cannot be fulfilled on {qualified_resource(group, plural)} {go_quote(name)}: "
        f"{detail}",
        _details(name, group, plural))


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiStatusError:
    """422 Invalid, one message for all errors, one cause per error."""
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    details = _details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return ApiStatusError(422, "Invalid",
                          f"{qualified_kind(group, kind)} {go_quote(name)} is invalid: {text}",
                          details)


def forbidden(group: str, plural: str, name: str, detail: str, *, code: int = 403,
              reason: str = "Forbidden", causes: list[JSON] | None = None) -> ApiStatusError:
    """``pods "x" is forbidden: <detail>`` (admission's shape, code and reason adjustable)."""
    resource = qualified_resource(group, plural)
    message = (f"{resource} {go_quote(name)} is forbidden: {detail}" if name
               else f"{resource} is forbidden: {detail}")
    details = _details(name, group, plural)
    if causes:
        details["causes"] = causes
    return ApiStatusError(code, reason, message, details)


def bad_request(message: str) -> ApiStatusError:
    """400 BadRequest with ``message`` as is."""
    return ApiStatusError(400, "BadRequest", message)


def expired(message: str) -> ApiStatusError:
    """410: a resourceVersion or continue token older than the kept history."""
    return ApiStatusError(410, "Expired", message)


def method_not_allowed(message: str) -> ApiStatusError:
    """405 MethodNotAllowed."""
    return ApiStatusError(405, "MethodNotAllowed", message)


def unsupported_media_type(accepted: tuple[str, ...]) -> ApiStatusError:
    """415 for a body (or patch) type the resource does not accept."""
    return ApiStatusError(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted))


def path_not_found(path: str) -> ApiStatusError:
    """404 for a path that names no served resource."""
    return ApiStatusError(404, "NotFound", "the server could not find the requested resource",
                          {"causes": [{"reason": "UnexpectedServerResponse",
                                       "message": f"404 page not found: {path}"}]})


def internal(message: str) -> ApiStatusError:
    """500 InternalError (an admission hook crashed, a bug)."""
    return ApiStatusError(500, "InternalError", f"Internal error occurred: {message}")


__all__ = ["JSON", "MODIFIED", "OMIT", "ApiStatusError", "FieldError", "already_exists",
           "bad_request", "conflict", "expired", "forbidden", "go_quote", "go_value",
           "internal", "invalid", "method_not_allowed", "not_found", "path_not_found",
           "qualified_kind", "qualified_resource", "unsupported_media_type"]
