"""What ovnk's admission rules and an API server that runs them agree on.

ovnk's admission rules (``udn.admission``: the UDN/CUDN validation a real cluster runs as
CRD CEL rules; ``admission.annotations``: upstream's ovnkube-identity webhooks) are
production logic and live in the core; the API server that calls them does not (in
development, the stand-in of the ``ovnk-local`` distribution).  This module is all both
sides share, so the core never imports a server:

* ``ENTRY_POINT_GROUP`` (``ovnk.admission``): each entry point is a ``register(registry)``
  function; a server calls it with its ``AdmissionRegistry``.
* ``AdmissionRegistry``: what a rule may ask of the server's registry.  A validating hook
  is called as ``hook(operation, new, old)`` (``CREATE``/``UPDATE``/``DELETE``; ``new`` is
  None on DELETE, ``old`` on CREATE), or ``hook(operation, new, old, user)`` when registered
  ``with_user=True`` (``user``: the requester's ``UserInfo``, None for the server's own
  writes).  It returns ``None`` to admit, or a message / ``FieldError``(s) (``HookResult``),
  which the server returns as 422 Invalid; or it raises ``AdmissionDenied``.
* ``UserInfo`` and ``MASTERS``: who is asking (Kubernetes' ``user.Info``).
* ``FieldError``: one invalid field, printed as apimachinery's ``field.Error`` prints it
  (with ``go_quote``/``go_value``, Go's ``%q``/``%v``), and ``type_name`` (kube-openapi's
  JSON type names) for the messages a schema check prints.
* ``AdmissionDenied``: a refusal that is not about a field (403 Forbidden, the message as
  is); ``WebhookDenied``, one a webhook answers (``webhook_denial`` words it as
  kube-apiserver does).
* ``WEBHOOK_ENTRY_POINT_GROUP`` (``ovnk.webhook``): rules a real cluster runs as admission
  webhooks (``ovnk webhook``, ``ovnk_core.webhook``), registered the same way; a hook's
  ``path`` is where the webhook server serves it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

JSON = dict[str, Any]

ENTRY_POINT_GROUP = "ovnk.admission"
"""Entry points ``name = "module:register"``, each called with an ``AdmissionRegistry``:
rules an API server runs itself (a real one as CEL)."""

WEBHOOK_ENTRY_POINT_GROUP = "ovnk.webhook"
"""Entry points ``name = "module:register"`` of the rules ``ovnk webhook`` serves over
HTTPS (a real cluster calls them through a ValidatingWebhookConfiguration)."""

MASTERS = "system:masters"
"""Kubernetes' break-glass group: its members pass RBAC (and ovnk's ownership rules)."""


# -- who is asking -------------------------------------------------------------------------------
@dataclass(frozen=True)
class UserInfo:
    """An authenticated identity (``user.Info``): name, uid, groups, extra."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The ``UserInfo`` of authentication.k8s.io (SelfSubjectReview, TokenReview)."""
        body: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            body["uid"] = self.uid
        if self.extra:
            body["extra"] = {k: list(v) for k, v in self.extra.items()}
        return body


# -- Go formatting -------------------------------------------------------------------------------
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


def type_name(value: Any) -> str:
    """The JSON type name kube-openapi reports for a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# -- field errors --------------------------------------------------------------------------------
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


# -- refusals ------------------------------------------------------------------------------------
class AdmissionDenied(Exception):
    """A hook's refusal that names no field, returned to the client as a webhook's denial is:
    ``code`` (403) and ``reason`` (``Forbidden``) with ``message`` as is, no details."""

    def __init__(self, message: str, code: int = 403, reason: str = "Forbidden") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason


def webhook_denial(webhook: str, detail: str) -> str:
    """How kube-apiserver words a webhook's denial for the client (``ToStatusErr``):
    ``admission webhook "<webhook>" denied the request: <detail>``, or ``... denied the
    request without explanation`` when the webhook gave none."""
    if not detail:
        return f"admission webhook {go_quote(webhook)} denied the request without explanation"
    return f"admission webhook {go_quote(webhook)} denied the request: {detail}"


class WebhookDenied(AdmissionDenied):
    """A webhook's denial: ``detail`` is what the webhook answers
    (``response.status.message``), ``message`` what the API server's client reads."""

    def __init__(self, webhook: str, detail: str, code: int = 403,
                 reason: str = "Forbidden") -> None:
        super().__init__(webhook_denial(webhook, detail), code, reason)
        self.webhook = webhook
        self.detail = detail


class PolicyDenied(Exception):
    """A refusal of a rule that upstream ships as a ValidatingAdmissionPolicy (CEL, evaluated
    by the API server itself).  A server words it as the real one does: ``<resource>
    "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>'
    denied request: <message>``, with ``reason`` (``Invalid``, the real default when a
    validation sets none, or ``Forbidden``) and its HTTP code."""

    def __init__(self, policy: str, message: str, binding: str = "",
                 reason: str = "Invalid") -> None:
        super().__init__(message)
        self.policy = policy
        self.binding = binding
        self.message = message
        self.reason = reason


HookResult = None | str | FieldError | Sequence[FieldError]
ValidatingHook = Callable[..., HookResult]   # (operation, new, old[, user])
MutatingHook = Callable[..., JSON | None]    # (operation, new, old[, user]); a dict replaces new


class AdmissionRegistry(Protocol):
    """What an ``ovnk.admission`` entry point may ask of the server's registry."""

    def register_validating(self, group: str, resource: str, hook: ValidatingHook, *,
                            name: str = "", subresources: tuple[str, ...] = ("",),
                            operations: tuple[str, ...] = ("CREATE", "UPDATE", "DELETE"),
                            with_user: bool = False, path: str = "") -> None:
        """Call ``hook`` for writes of ``resource`` in ``group`` (``""``: the core group);
        ``subresources`` lists the endpoints it covers (``""`` is the main resource, add
        ``"status"`` to see status writes too).  ``path``: where a webhook server serves
        the hook (``/node``); a server that calls it in-process ignores it."""

    def register_mutating(self, group: str, resource: str, hook: MutatingHook, *,
                          name: str = "", subresources: tuple[str, ...] = ("",),
                          operations: tuple[str, ...] = ("CREATE", "UPDATE"),
                          with_user: bool = False) -> None:
        """Call ``hook`` before validation; a dict it returns replaces the new object."""


__all__ = ["ENTRY_POINT_GROUP", "JSON", "MASTERS", "OMIT", "WEBHOOK_ENTRY_POINT_GROUP",
           "AdmissionDenied", "AdmissionRegistry", "FieldError", "HookResult", "MutatingHook",
           "PolicyDenied", "UserInfo", "ValidatingHook", "WebhookDenied", "go_quote",
           "go_value", "type_name", "webhook_denial"]
