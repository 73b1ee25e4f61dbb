"""Kubernetes-shaped errors: every failure leaves the server as a ``Status`` object.

Clients (the official Python client, kubectl, ovnk's own ``kube.errors``)
dispatch on ``reason`` and ``code`` and show ``message`` to people, so the
message formats here copy the real API server's (``pods "x" not found``,
``Operation cannot be fulfilled on ...``, ``Kind.group "x" is invalid: ...``).
``FieldError`` renders one field problem the way apimachinery's
``field.Error`` does, for schema validation and admission hooks alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]

OMIT = object()
"""Marker for a ``FieldError`` that shows no value (``Required value``)."""

_TYPE_TEXT = {
    "NotFound": ("Not found", "FieldValueNotFound"),
    "Required": ("Required value", "FieldValueRequired"),
    "Duplicate": ("Duplicate value", "FieldValueDuplicate"),
    "Invalid": ("Invalid value", "FieldValueInvalid"),
    "NotSupported": ("Unsupported value", "FieldValueNotSupported"),
    "Forbidden": ("Forbidden", "FieldValueForbidden"),
    "TooLong": ("Too long", "FieldValueTooLong"),
    "TooMany": ("Too many", "FieldValueTooMany"),
    "TypeInvalid": ("Invalid value", "FieldValueTypeInvalid"),
}
_VALUELESS = ("Required", "Forbidden", "TooLong")


_GO_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
               "\v": r"\v", '"': r'\"', "\\": r"\\"}


def go_quote(text: str) -> str:
    r"""``text`` as Go's ``%q`` (``strconv.Quote``) prints it: printable characters as they
    are, the rest escaped (``\x00``, ``\u00a0``, ``\U000e0001``)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable() and not 0xD800 <= code <= 0xDFFF:
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_value(value: Any) -> str:
    """A value as Go's ``%v``/``%q`` would print it in a field error."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class FieldError:
    """One invalid field: ``spec.topology: Unsupported value: "Foo": supported values: ..."``."""

    type: str
    field: str
    value: Any = OMIT
    detail: str = ""
    supported: tuple[Any, ...] = ()

    @property
    def reason(self) -> str:
        """The cause reason (``FieldValueInvalid``, ...)."""
        return _TYPE_TEXT[self.type][1]

    def body(self) -> str:
        """The message without the field path (``details.causes[].message``)."""
        text = _TYPE_TEXT[self.type][0]
        if self.type not in _VALUELESS and self.value is not OMIT:
            text += f": {go_value(self.value)}"
        detail = self.detail
        if self.type == "NotSupported" and self.supported:
            detail = "supported values: " + ", ".join(go_value(v) for v in self.supported)
        if detail:
            text += f": {detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> JSON:
        """One ``details.causes`` entry."""
        return {"reason": self.reason, "message": self.body(), "field": self.field}


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
