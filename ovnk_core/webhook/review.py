"""The ``admission.k8s.io/v1`` AdmissionReview: what an API server asks a webhook, and the answer.

Both sides of the protocol live here, so that the webhook server (``ovnk webhook``) and an
API server that calls webhooks (the local one of ``ovnk-local``) agree on one reading of
it.  ``parse_request`` turns a body into a ``ReviewRequest`` or raises ``BadReview`` with
the reason (a webhook answers that with a 400, never a crash); ``response_review`` builds
the answer; ``parse_response`` is the API server's check of that answer (what
kube-apiserver's ``VerifyAdmissionResponse`` checks, in its words).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ovnk_core import jsondepth
from ovnk_core.admission.contract import UserInfo

JSON = dict[str, Any]

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_REQUEST_BYTES = 7 * 1024 * 1024
"""controller-runtime's limit on an AdmissionReview body (kube-apiserver sends at most
3 MiB objects, twice for an UPDATE, plus the review around them)."""


class BadReview(ValueError):
    """A body that is not an ``admission.k8s.io/v1`` AdmissionReview request; the message
    says what is wrong.  ``uid``: the request's uid when it could be read."""

    def __init__(self, message: str, uid: str = "") -> None:
        super().__init__(message)
        self.uid = uid


@dataclass(frozen=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str

    def as_json(self) -> JSON:
        return {"group": self.group, "version": self.version, "resource": self.resource}


@dataclass(frozen=True)
class ReviewRequest:
    """The fields of ``request`` a validating webhook decides on."""

    uid: str
    resource: GroupVersionResource
    sub_resource: str
    operation: str
    name: str
    namespace: str
    user: UserInfo
    object: JSON | None
    old_object: JSON | None
    dry_run: bool = False
    kind: JSON = field(default_factory=dict)


def _string(request: JSON, key: str, uid: str, required: bool = False) -> str:
    value = request.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise BadReview(f"request.{key} must be a non-empty string" if required
                        else f"request.{key} must be a string", uid)
    return value


def _object(body: JSON, key: str, uid: str) -> JSON | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadReview(f"request.{key} must be an object or null", uid)
    return value


def _user(body: Any, uid: str) -> UserInfo:
    if not isinstance(body, dict):
        raise BadReview("request.userInfo must be an object", uid)
    name = body.get("username", "")
    groups = body.get("groups") or []
    extra = body.get("extra") or {}
    if not isinstance(name, str) or not isinstance(groups, list) or \
            not all(isinstance(g, str) for g in groups):
        raise BadReview("request.userInfo: username must be a string and groups a list of "
                        "strings", uid)
    if not isinstance(extra, dict) or not all(
            isinstance(v, list) and all(isinstance(i, str) for i in v) for v in extra.values()):
        raise BadReview("request.userInfo.extra must map names to lists of strings", uid)
    return UserInfo(name, tuple(groups), str(body.get("uid") or ""),
                    {str(k): tuple(v) for k, v in extra.items()})


def decode(data: bytes) -> Any:
    """A body as JSON (bounded nesting); ``BadReview`` when it is not."""
    try:
        return jsondepth.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReview(f"couldn't decode the body as JSON: {exc}") from None


def parse_request(body: Any) -> ReviewRequest:
    """The request of an AdmissionReview; ``BadReview`` names what is missing or wrong."""
    if not isinstance(body, dict):
        raise BadReview("the body is not a JSON object")
    if body.get("apiVersion") != API_VERSION or body.get("kind") != KIND:
        raise BadReview(f"expected apiVersion {API_VERSION!r} and kind {KIND!r}, got "
                        f"{body.get('apiVersion')!r} and {body.get('kind')!r}")
    request = body.get("request")
    if not isinstance(request, dict):
        raise BadReview("the AdmissionReview has no request")
    uid = _string(request, "uid", "", required=True)
    resource = request.get("resource")
    if not isinstance(resource, dict) or not all(
            isinstance(resource.get(k, ""), str) for k in ("group", "version", "resource")) \
            or not resource.get("resource") or not resource.get("version"):
        raise BadReview("request.resource must name a version and a resource", uid)
    operation = _string(request, "operation", uid, required=True)
    if operation not in OPERATIONS:
        raise BadReview(f"request.operation {operation!r} is not one of "
                        f"{', '.join(OPERATIONS)}", uid)
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadReview("request.dryRun must be a boolean", uid)
    kind = request.get("kind") or {}
    return ReviewRequest(
        uid=uid,
        resource=GroupVersionResource(str(resource.get("group") or ""),
                                      str(resource["version"]), str(resource["resource"])),
        sub_resource=_string(request, "subResource", uid),
        operation=operation,
        name=_string(request, "name", uid),
        namespace=_string(request, "namespace", uid),
        user=_user(request.get("userInfo", {}), uid),
        object=_object(request, "object", uid),
        old_object=_object(request, "oldObject", uid),
        dry_run=dry_run,
        kind=kind if isinstance(kind, dict) else {})


def response_review(uid: str, allowed: bool, code: int = 0, message: str = "",
                    reason: str = "", warnings: tuple[str, ...] = ()) -> JSON:
    """The AdmissionReview a webhook answers: ``allowed``, and for a refusal the
    ``status`` (code, reason, message) the API server shows its client."""
    response: JSON = {"uid": uid, "allowed": allowed}
    if not allowed:
        status: JSON = {"metadata": {}, "status": "Failure", "code": code or 403}
        if message:
            status["message"] = message
        if reason:
            status["reason"] = reason
        response["status"] = status
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


@dataclass(frozen=True)
class ReviewResponse:
    """A webhook's answer as an API server reads it."""

    allowed: bool
    status: JSON
    warnings: tuple[str, ...] = ()


def parse_response(body: Any, uid: str) -> ReviewResponse:
    """The webhook's answer to the request ``uid``; ``BadReview`` with kube-apiserver's
    reason when it is not a valid one (the call then counts as failed)."""
    if not isinstance(body, dict):
        raise BadReview("the response is not a JSON object")
    if body.get("apiVersion") != API_VERSION or body.get("kind") != KIND:
        raise BadReview(f"expected webhook response of {API_VERSION}, Kind={KIND}, got "
                        f"{body.get('apiVersion')}, Kind={body.get('kind')}")
    response = body.get("response")
    if not isinstance(response, dict):
        raise BadReview("webhook response was absent")
    if response.get("uid") != uid:
        raise BadReview(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    allowed = response.get("allowed")
    if not isinstance(allowed, bool):
        raise BadReview("response.allowed must be a boolean")
    status = response.get("status") or {}
    warnings = response.get("warnings") or []
    if not isinstance(status, dict) or not isinstance(warnings, list):
        raise BadReview("response.status must be an object and response.warnings a list")
    return ReviewResponse(allowed, status, tuple(str(w) for w in warnings))


__all__ = ["API_VERSION", "KIND", "MAX_REQUEST_BYTES", "BadReview", "GroupVersionResource",
           "ReviewRequest", "ReviewResponse", "decode", "parse_request", "parse_response",
           "response_review"]
