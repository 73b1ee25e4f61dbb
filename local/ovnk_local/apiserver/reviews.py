"""The review kinds: "who am I", "may I", "what may I", answered and never stored.

``SelfSubjectAccessReview`` (``kubectl auth can-i VERB RESOURCE``),
``SelfSubjectRulesReview`` (``kubectl auth can-i --list``),
``SelfSubjectReview`` (``kubectl auth whoami``), and for administrators
``SubjectAccessReview`` / ``LocalSubjectAccessReview`` (ask about another user)
and ``TokenReview`` (who does a token belong to).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ovnk_local.apiserver.authn import UserInfo
from ovnk_local.apiserver.authz import Attributes, Decision
from ovnk_local.apiserver.errors import JSON, FieldError, bad_request, invalid
from ovnk_local.apiserver.rbac import RbacAuthorizer
from ovnk_local.apiserver.resources import ResourceType

Authorize = Callable[[Attributes], Decision]
TokenLookup = Callable[[str], UserInfo | None]


class Reviews:
    """Answers the review kinds for one server."""

    def __init__(self, authorize: Authorize, rbac: RbacAuthorizer,
                 token_lookup: TokenLookup) -> None:
        self.authorize = authorize
        self.rbac = rbac
        self.token_lookup = token_lookup

    def answer(self, rt: ResourceType, namespace: str, body: Any, user: UserInfo) -> JSON:
        """The created review object with its ``status``."""
        if not isinstance(body, dict):
            raise bad_request(f"a {rt.kind} must be a JSON object")
        raw_spec = body.get("spec")
        spec: JSON = raw_spec if isinstance(raw_spec, dict) else {}
        reply: JSON = {"kind": rt.kind, "apiVersion": rt.api_version,
                       "metadata": {"creationTimestamp": None}, "spec": spec}
        if rt.kind == "SelfSubjectReview":
            reply.pop("spec")
            reply["status"] = {"userInfo": user.as_json()}
        elif rt.kind == "TokenReview":
            found = self.token_lookup(str(spec.get("token") or ""))
            reply["status"] = ({"authenticated": True, "user": found.as_json(),
                                "audiences": spec.get("audiences") or []}
                               if found else {"authenticated": False, "user": {}})
        elif rt.kind == "SelfSubjectRulesReview":
            reply["status"] = self._rules(user, str(spec.get("namespace") or ""))
        else:
            subject = user
            if rt.kind in ("SubjectAccessReview", "LocalSubjectAccessReview"):
                subject = _subject_of(rt, spec)
            reply["status"] = self._access(rt, subject, spec, namespace)
        return reply

    def _access(self, rt: ResourceType, user: UserInfo, spec: JSON, namespace: str) -> JSON:
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if not isinstance(resource, dict):
            resource = None
        if not isinstance(non_resource, dict):
            non_resource = None
        if bool(resource) == bool(non_resource):
            raise invalid(rt.group, rt.kind, "", [FieldError(
                "Invalid", "spec.resourceAttributes", resource or "",
                "exactly one of nonResourceAttributes or resourceAttributes must be "
                "specified")])
        if resource:
            attrs_ns = str(resource.get("namespace") or "")
            if rt.kind == "LocalSubjectAccessReview":
                if attrs_ns and attrs_ns != namespace:
                    raise invalid(rt.group, rt.kind, "", [FieldError(
                        "Invalid", "spec.resourceAttributes.namespace", attrs_ns,
                        "must match metadata.namespace")])
                attrs_ns = namespace
            attrs = Attributes(user, str(resource.get("verb") or ""), True,
                               str(resource.get("group") or ""),
                               str(resource.get("version") or ""),
                               str(resource.get("resource") or ""),
                               str(resource.get("subresource") or ""), attrs_ns,
                               str(resource.get("name") or ""))
        else:
            assert non_resource is not None
            attrs = Attributes(user, str(non_resource.get("verb") or ""), False,
                               path=str(non_resource.get("path") or ""))
        decision = self.authorize(attrs)
        status: JSON = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules(self, user: UserInfo, namespace: str) -> JSON:
        found = self.rbac.rules_for(user, namespace)
        resource_rules: list[JSON] = []
        non_resource_rules: list[JSON] = []
        for rule, _, _ in found.rules:
            body = rule.as_json()
            if rule.non_resource_urls:
                non_resource_rules.append(body)
            else:
                resource_rules.append({**body, "resourceNames": list(rule.resource_names)}
                                      if rule.resource_names else body)
        status: JSON = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                        "incomplete": bool(found.errors)}
        if found.errors:
            status["evaluationError"] = "; ".join(found.errors)
        return status


def _subject_of(rt: ResourceType, spec: JSON) -> UserInfo:
    name = spec.get("user")
    groups = spec.get("groups") or []
    if not isinstance(name, str) or not name:
        if not groups:
            raise invalid(rt.group, rt.kind, "", [FieldError(
                "Invalid", "spec.user", "", "at least one of user or group must be "
                "specified")])
        name = ""
    extra = spec.get("extra") or {}
    return UserInfo(name, tuple(str(g) for g in groups if isinstance(g, str)),
                    str(spec.get("uid") or ""),
                    {str(k): tuple(map(str, v)) for k, v in extra.items()
                     if isinstance(v, list)} if isinstance(extra, dict) else {})


__all__ = ["Reviews"]
