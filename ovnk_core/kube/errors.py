"""Kubernetes API errors as exception classes callers can catch by meaning."""

from __future__ import annotations

from typing import Any

from ovnk_core import jsondepth
from ovnk_core.errors import OvnkError


class ApiError(OvnkError):
    """An error reply from the API server, with its HTTP code, reason and message."""

    def __init__(self, code: int, reason: str, message: str, status: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.status = status


class NotFound(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


class Conflict(ApiError):
    pass


class Gone(ApiError):
    """The requested resourceVersion is too old (HTTP 410): relist."""


class Invalid(ApiError):
    pass


_BY_REASON: dict[str, type[ApiError]] = {
    "NotFound": NotFound, "AlreadyExists": AlreadyExists, "Conflict": Conflict,
    "Gone": Gone, "Expired": Gone, "Invalid": Invalid,
}
_BY_CODE: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 410: Gone, 422: Invalid}


def error_from_status(status: dict[str, Any], default_code: int = 500) -> ApiError:
    code = int(status.get("code") or default_code)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or f"HTTP {code}")
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, ApiError)
    if cls is Conflict and reason == "AlreadyExists":
        cls = AlreadyExists
    return cls(code, reason, message, status)


def error_from_response(method: str, path: str, code: int, data: bytes | None) -> ApiError:
    try:
        status = jsondepth.loads(data or b"{}")
    except ValueError:  # not JSON, or nested too deeply to read
        status = {}
    if not isinstance(status, dict) or status.get("kind") != "Status":
        text = (data or b"").decode(errors="replace")[:200]
        status = {"code": code, "message": f"{method} {path}: HTTP {code} {text}".strip()}
    status.setdefault("code", code)
    return error_from_status(status, code)
