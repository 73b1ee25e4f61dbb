"""Which webhooks of the ValidatingWebhookConfigurations a request is sent to.

kube-apiserver's rules (``k8s.io/apiserver/pkg/admission/plugin/webhook``: ``rules.Matcher``,
the namespace and object matchers), on an ``Attributes`` of the request:

* a rule matches when its ``operations``, ``apiGroups``, ``apiVersions`` (each possibly
  ``*``), ``resources`` and ``scope`` do.  A resource entry is ``name`` (the resource
  itself, no subresource), ``name/sub``, ``name/*`` (the resource and every subresource),
  ``*`` (every resource, no subresource), ``*/sub`` or ``*/*``.  ``Namespaced`` matches a
  namespaced object (never a Namespace), ``Cluster`` a cluster-scoped one or a Namespace.
* ``namespaceSelector`` applies to namespaced requests and to Namespaces themselves (their
  own labels); a request for any other cluster-scoped object always passes it.
* ``objectSelector`` passes when the new or the old object's labels match it.
* Requests for the webhook configurations themselves are never sent to a webhook (a broken
  webhook must not lock its own configuration).

``matchPolicy`` makes no difference here: every resource is served in one version, so
``Equivalent`` has no other version to convert to.  ``matchConditions`` (CEL) are not
evaluated: a webhook with some is called as if they held (documented).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ovnk_core.admission.contract import UserInfo
from ovnk_core.kube.selectors import selector_matches
from ovnk_local.apiserver.errors import JSON

NAMESPACES = "namespaces"
EXEMPT = frozenset({("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")})


@dataclass(frozen=True)
class Attributes:
    """One write, as admission sees it."""

    group: str
    version: str
    resource: str
    subresource: str
    operation: str
    namespace: str
    name: str
    kind: str
    object: JSON | None
    old_object: JSON | None
    user: UserInfo
    dry_run: bool = False

    @property
    def exempt(self) -> bool:
        return (self.group, self.resource) in EXEMPT


def _has(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource_matches(entries: list[str], resource: str, subresource: str) -> bool:
    for entry in entries:
        name, _, sub = entry.partition("/")
        if (name in ("*", resource)) and (sub == "*" or sub == subresource):
            return True
    return False


def _scope_matches(scope: str, attrs: Attributes) -> bool:
    if scope == "Namespaced":
        return attrs.resource != NAMESPACES and bool(attrs.namespace)
    if scope == "Cluster":
        return attrs.resource == NAMESPACES or not attrs.namespace
    return True


def rule_matches(rule: JSON, attrs: Attributes) -> bool:
    """``rules.Matcher.Matches``: one RuleWithOperations against the request."""
    return (_has(rule.get("operations") or [], attrs.operation)
            and _has(rule.get("apiGroups") or [], attrs.group)
            and _has(rule.get("apiVersions") or [], attrs.version)
            and _resource_matches(rule.get("resources") or [], attrs.resource,
                                  attrs.subresource)
            and _scope_matches(str(rule.get("scope") or "*"), attrs))


def _labels(obj: JSON | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def namespace_selector_matches(hook: JSON, attrs: Attributes,
                               namespace_labels: Callable[[str], Mapping[str, str]]) -> bool:
    selector = hook.get("namespaceSelector")
    if not selector:
        return True
    if attrs.resource == NAMESPACES and not attrs.subresource:
        labels = _labels(attrs.object if attrs.object is not None else attrs.old_object)
        return selector_matches(selector, labels or {})
    if not attrs.namespace:
        return True
    return selector_matches(selector, namespace_labels(attrs.namespace))


def object_selector_matches(hook: JSON, attrs: Attributes) -> bool:
    selector = hook.get("objectSelector")
    if not selector:
        return True
    return any(labels is not None and selector_matches(selector, labels)
               for labels in (_labels(attrs.object), _labels(attrs.old_object)))


def webhook_matches(hook: JSON, attrs: Attributes,
                    namespace_labels: Callable[[str], Mapping[str, str]]) -> bool:
    """Whether ``hook`` (one entry of ``webhooks``) is called for ``attrs``."""
    if attrs.exempt:
        return False
    if not any(rule_matches(rule, attrs) for rule in hook.get("rules") or []
               if isinstance(rule, dict)):
        return False
    return (namespace_selector_matches(hook, attrs, namespace_labels)
            and object_selector_matches(hook, attrs))


__all__ = ["EXEMPT", "Attributes", "namespace_selector_matches", "object_selector_matches",
           "rule_matches", "webhook_matches"]
