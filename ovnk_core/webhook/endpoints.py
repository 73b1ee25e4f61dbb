"""The rules ``ovnk webhook`` serves, by path, and how one AdmissionReview is answered.

``WebhookRules`` is an ``AdmissionRegistry`` (``admission.contract``): the rule modules
register their hooks with it exactly as with an API server that runs them in-process, each
with the ``path`` it is served at (``/node``, ``/pod``), so the webhook runs the same rule
code, not a copy.  ``answer`` calls the hooks of a path whose resource, subresource and
operation the request matches and turns what they return into the AdmissionReview
response, the way controller-runtime's validating webhooks do:

* nothing to say: allowed;
* ``AdmissionDenied``/``WebhookDenied``: refused with its code and reason (403 Forbidden),
  the message being the webhook's own words (kube-apiserver prefixes
  ``admission webhook "<name>" denied the request: ``);
* a message or ``FieldError``\\ s: refused, 422 Invalid;
* ``PolicyDenied``: refused with its reason;
* a hook that raises anything else: refused with 500 and the error logged (what
  controller-runtime's ``WithRecoverPanic`` does), the server keeps serving.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points

from ovnk_core.admission.contract import (
    WEBHOOK_ENTRY_POINT_GROUP,
    AdmissionDenied,
    AdmissionRegistry,
    FieldError,
    MutatingHook,
    PolicyDenied,
    ValidatingHook,
    WebhookDenied,
)
from ovnk_core.webhook.review import JSON, ReviewRequest, response_review

log = logging.getLogger(__name__)

_POLICY_CODES = {"Invalid": 422, "Forbidden": 403}


@dataclass(frozen=True)
class _Hook:
    name: str
    group: str
    resource: str
    subresources: tuple[str, ...]
    operations: tuple[str, ...]
    validate: ValidatingHook
    with_user: bool

    def applies(self, request: ReviewRequest) -> bool:
        return (request.resource.group == self.group
                and request.resource.resource == self.resource
                and request.sub_resource in self.subresources
                and request.operation in self.operations)


class WebhookRules:
    """The validating hooks served at each path."""

    def __init__(self) -> None:
        self._by_path: dict[str, list[_Hook]] = {}

    def register_validating(self, group: str, resource: str, hook: ValidatingHook, *,
                            name: str = "", subresources: tuple[str, ...] = ("",),
                            operations: tuple[str, ...] = ("CREATE", "UPDATE", "DELETE"),
                            with_user: bool = False, path: str = "") -> None:
        """Serve ``hook`` at ``path`` (required: a webhook has an address)."""
        if not path.startswith("/"):
            raise ValueError(f"webhook hook {name or hook!r} needs a path such as '/node' "
                             f"(got {path!r})")
        self._by_path.setdefault(path, []).append(_Hook(
            name or getattr(hook, "__name__", "hook"), group, resource, subresources,
            operations, hook, with_user))

    def register_mutating(self, group: str, resource: str, hook: MutatingHook, *,
                          name: str = "", subresources: tuple[str, ...] = ("",),
                          operations: tuple[str, ...] = ("CREATE", "UPDATE"),
                          with_user: bool = False) -> None:
        """Not served: ``ovnk webhook`` is a validating webhook only (as upstream's)."""
        raise ValueError(f"ovnk webhook serves validating hooks only; {name or hook!r} is "
                         "a mutating one")

    @property
    def paths(self) -> list[str]:
        return sorted(self._by_path)

    def answer(self, path: str, request: ReviewRequest) -> JSON:
        """The AdmissionReview answering ``request`` sent to ``path`` (a known one)."""
        for hook in self._by_path.get(path, []):
            if not hook.applies(request):
                continue
            refusal = self._call(hook, request)
            if refusal is not None:
                return refusal
        return response_review(request.uid, True)

    def _call(self, hook: _Hook, request: ReviewRequest) -> JSON | None:
        new = None if request.operation == "DELETE" else request.object
        old = request.old_object
        args = (request.operation, new, old, request.user) if hook.with_user \
            else (request.operation, new, old)
        what = f"{request.operation} {request.resource.resource}" \
               f"{'/' + request.sub_resource if request.sub_resource else ''} " \
               f"{request.namespace + '/' if request.namespace else ''}{request.name}"
        try:
            result = hook.validate(*args)
        except WebhookDenied as denied:
            log.info("%s: %s by %s denied: %s", hook.name, what, request.user.name,
                     denied.detail)
            return response_review(request.uid, False, denied.code, denied.detail,
                                   denied.reason)
        except AdmissionDenied as denied:
            log.info("%s: %s by %s denied: %s", hook.name, what, request.user.name,
                     denied.message)
            return response_review(request.uid, False, denied.code, denied.message,
                                   denied.reason)
        except PolicyDenied as denied:
            return response_review(request.uid, False, _POLICY_CODES.get(denied.reason, 422),
                                   denied.message, denied.reason)
        except Exception as exc:
            log.exception("%s: the hook failed on %s", hook.name, what)
            return response_review(request.uid, False, 500,
                                   f"internal error in {hook.name}: {exc}", "InternalError")
        if result is None or result == [] or result == ():
            return None
        log.info("%s: %s by %s rejected: %s", hook.name, what, request.user.name, result)
        return response_review(request.uid, False, 422, _invalid_text(result), "Invalid")


def _invalid_text(result: str | FieldError | Sequence[FieldError]) -> str:
    if isinstance(result, str | FieldError):
        return str(result)
    errors = [str(error) for error in result]
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def load_rules(modules: Iterable[str] = (), use_entry_points: bool = True) -> WebhookRules:
    """The rules of the ``ovnk.webhook`` entry points (and of ``module:function`` specs)."""
    rules = WebhookRules()
    registry: AdmissionRegistry = rules  # what the rules see of it: the core's contract
    for spec in modules:
        module, _, name = spec.partition(":")
        getattr(importlib.import_module(module), name or "register")(registry)
    if use_entry_points:
        for entry in entry_points(group=WEBHOOK_ENTRY_POINT_GROUP):
            entry.load()(registry)
            log.info("webhook: hooks registered by entry point %s (%s)", entry.name,
                     entry.value)
    return rules


__all__ = ["WebhookRules", "load_rules"]
