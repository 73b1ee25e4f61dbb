"""Admission: Python hooks that mutate or reject writes.

The real cluster enforces some UDN rules with CEL (CRD
``x-kubernetes-validations``) and a ValidatingAdmissionPolicy; this server
does not evaluate CEL, so ovnk registers Python hooks per ``(group,
resource)`` instead.  A validating hook is called as ``hook(operation,
new_object, old_object)`` (``CREATE``/``UPDATE``/``DELETE``; ``new`` is None
on DELETE, ``old`` is None on CREATE) and returns ``None`` to allow, or a
message / ``FieldError``(s) to reject with 422 Invalid; it may also raise
``PolicyDenied`` (the ValidatingAdmissionPolicy shape), ``AdmissionDenied`` (a webhook's
denial) or any ``ApiStatusError``.  The hooks' side of this (types, the
``ovnk.admission`` entry point group, the registry's interface) is the core's
``ovnk_core.admission.contract``: ovnk's own rules live in the core and import nothing of
this server.  A hook registered ``with_user=True`` is called with a
fourth argument, the requesting ``UserInfo`` (``None`` for the server's own
writes), as a webhook sees ``request.userInfo``.  Hooks run outside the store
lock, before the write.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from ovnk_core.admission.contract import (
    ENTRY_POINT_GROUP,
    AdmissionDenied,
    FieldError,
    MutatingHook,
    PolicyDenied,
    UserInfo,
    ValidatingHook,
)
from ovnk_core.admission.contract import AdmissionRegistry as RuleRegistry
from ovnk_local.apiserver.errors import (
    JSON,
    ApiStatusError,
    forbidden,
    go_quote,
    internal,
    invalid,
    qualified_kind,
)
from ovnk_local.apiserver.objectmeta import key_of
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.webhook_calls import WebhookCaller

log = logging.getLogger(__name__)

_REASON_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401,
                 "RequestEntityTooLarge": 413}


@dataclass(frozen=True)
class _Hook:
    name: str
    group: str
    resource: str
    subresources: tuple[str, ...]
    operations: tuple[str, ...]
    validate: ValidatingHook | None = None
    mutate: MutatingHook | None = None
    with_user: bool = False

    def call(self, fn: Callable[..., Any], operation: str, new: JSON | None,
             old: JSON | None, user: UserInfo | None) -> Any:
        if self.with_user:
            return fn(operation, new, old, user)
        return fn(operation, new, old)

    def applies(self, rt: ResourceType, subresource: str, operation: str) -> bool:
        return (self.group == rt.group and self.resource == rt.plural
                and subresource in self.subresources and operation in self.operations)


class AdmissionRegistry:
    """Hooks registered at run time, called for every matching API write."""

    def __init__(self, webhooks: WebhookCaller | None = None) -> None:
        self._lock = threading.Lock()
        self._hooks: list[_Hook] = []
        # the ValidatingWebhookConfigurations' webhooks, called after the hooks
        self.webhooks = webhooks

    def register_validating(self, group: str, resource: str, hook: ValidatingHook, *,
                            name: str = "", subresources: tuple[str, ...] = ("",),
                            operations: tuple[str, ...] = ("CREATE", "UPDATE", "DELETE"),
                            with_user: bool = False, path: str = "") -> None:
        """Call ``hook(operation, new, old)`` for writes of ``resource`` in ``group``.

        ``subresources`` lists which endpoints the hook covers: ``""`` is the main
        resource, add ``"status"`` to also see status writes.  ``with_user``: the hook
        takes the requester (``UserInfo`` or None) as a fourth argument.  ``path`` (where
        a webhook server serves it) means nothing in-process.
        """
        self._add(_Hook(name or getattr(hook, "__name__", "hook"), group, resource,
                        subresources, operations, validate=hook, with_user=with_user))

    def register_mutating(self, group: str, resource: str, hook: MutatingHook, *,
                          name: str = "", subresources: tuple[str, ...] = ("",),
                          operations: tuple[str, ...] = ("CREATE", "UPDATE"),
                          with_user: bool = False) -> None:
        """Call ``hook(operation, new, old)``; a returned dict replaces the new object."""
        self._add(_Hook(name or getattr(hook, "__name__", "hook"), group, resource,
                        subresources, operations, mutate=hook, with_user=with_user))

    def unregister(self, name: str) -> None:
        """Remove every hook registered under ``name``."""
        with self._lock:
            self._hooks = [h for h in self._hooks if h.name != name]

    def _add(self, hook: _Hook) -> None:
        with self._lock:
            self._hooks.append(hook)

    def _matching(self, rt: ResourceType, subresource: str, operation: str) -> list[_Hook]:
        with self._lock:
            return [h for h in self._hooks if h.applies(rt, subresource, operation)]

    def mutate(self, rt: ResourceType, subresource: str, operation: str, obj: JSON,
               old: JSON | None, user: UserInfo | None = None) -> JSON:
        """Run the mutating hooks; returns the (possibly replaced) object."""
        for hook in self._matching(rt, subresource, operation):
            if hook.mutate is None:
                continue
            try:
                result = hook.call(hook.mutate, operation, obj, old, user)
            except ApiStatusError:
                raise
            except AdmissionDenied as denied:
                raise denial(denied) from None
            except Exception as exc:
                log.exception("admission: mutating hook %s failed on %s", hook.name,
                              key_of(obj))
                raise internal(f"failed calling admission hook {hook.name!r}: {exc}") from exc
            if isinstance(result, dict):
                obj = result
        return obj

    def validate(self, rt: ResourceType, subresource: str, operation: str, obj: JSON | None,
                 old: JSON | None, user: UserInfo | None = None, dry_run: bool = False) -> None:
        """Run the validating hooks, then the webhooks of the ValidatingWebhookConfigurations
        for a user's write; raises the first rejection as an ``ApiStatusError``."""
        subject = obj if obj is not None else old or {}
        name = str((subject.get("metadata") or {}).get("name") or "")
        for hook in self._matching(rt, subresource, operation):
            if hook.validate is None:
                continue
            try:
                result = hook.call(hook.validate, operation, obj, old, user)
            except ApiStatusError:
                raise
            except AdmissionDenied as denied:
                log.info("admission: %s %s denied by %s", operation, key_of(subject), hook.name)
                raise denial(denied) from None
            except PolicyDenied as denied:
                log.info("admission: %s %s denied by policy %s", operation, key_of(subject),
                         denied.policy)
                raise policy_error(rt, name, denied) from None
            except Exception as exc:
                log.exception("admission: hook %s failed on %s", hook.name, key_of(subject))
                raise internal(f"failed calling admission hook {hook.name!r}: {exc}") from exc
            if result is None or result == [] or result == ():
                continue
            log.info("admission: %s %s rejected by %s", operation, key_of(subject), hook.name)
            raise rejection(rt, name, result)
        if self.webhooks is not None and user is not None:
            self.webhooks.validate(rt, subresource, operation, obj, old, user, dry_run)


def denial(denied: AdmissionDenied) -> ApiStatusError:
    """A hook's ``AdmissionDenied`` as the client receives it (a webhook's denial: its code,
    reason and message, no details)."""
    return ApiStatusError(denied.code, denied.reason, denied.message)


def rejection(rt: ResourceType, name: str, result: str | FieldError | Sequence[FieldError],
              ) -> ApiStatusError:
    """The 422 Invalid a hook's result turns into."""
    if isinstance(result, str):
        return ApiStatusError(
            422, "Invalid",
            f"{qualified_kind(rt.group, rt.kind)} {go_quote(name)} is invalid: {result}",
            {"name": name, "group": rt.group, "kind": rt.kind,
             "causes": [{"message": result}]})
    errors = [result] if isinstance(result, FieldError) else list(result)
    return invalid(rt.group, rt.kind, name, errors)


def policy_error(rt: ResourceType, name: str, denied: PolicyDenied) -> ApiStatusError:
    """A ValidatingAdmissionPolicy denial as the real server words and codes it."""
    if denied.binding:
        text = (f"ValidatingAdmissionPolicy '{denied.policy}' with binding '{denied.binding}' "
                f"denied request: {denied.message}")
    else:
        text = f"ValidatingAdmissionPolicy '{denied.policy}' denied request: {denied.message}"
    return forbidden(rt.group, rt.plural, name, text, code=_REASON_CODES.get(denied.reason, 422),
                     reason=denied.reason, causes=[{"message": text}])


def load_plugins(registry: AdmissionRegistry, modules: Iterable[str] = (),
                 use_entry_points: bool = False) -> None:
    """Let code outside the server register hooks: each ``module:function`` in ``modules``
    and, with ``use_entry_points``, each ``ovnk.admission`` entry point is called with
    ``registry``."""
    rules: RuleRegistry = registry  # what the rules see of it: the core's contract
    for spec in modules:
        module, _, name = spec.partition(":")
        getattr(importlib.import_module(module), name or "register")(rules)
        log.info("admission: hooks registered by %s", spec)
    if use_entry_points:
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            entry.load()(rules)
            log.info("admission: hooks registered by entry point %s (%s)", entry.name,
                     entry.value)

