"""Authorization attributes of a request, and the 403 a refused request gets.

A request is described the way kube-apiserver's ``authorizer.Attributes``
describes it: who, which verb, and either a resource (group, resource,
subresource, namespace, name) or a non-resource path.  ``forbidden_error``
words the refusal exactly as the real server does, so kubectl prints
``Error from server (Forbidden): pods is forbidden: User "alice" cannot list
resource "pods" in API group "" in the namespace "blue"``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_local.apiserver.authn import UserInfo
from ovnk_local.apiserver.errors import ApiStatusError, forbidden

# HTTP method -> verb, for requests that name one object (collections: list/deletecollection)
_ITEM_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update",
               "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class Attributes:
    """What one request wants to do (``authorizer.Attributes``)."""

    user: UserInfo
    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def resource_and_subresource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def resource_verb(method: str, has_name: bool, watch: bool, subresource: str) -> str:
    """The verb of a resource request, as the real server derives it from the method."""
    if subresource in ("exec", "attach", "portforward"):
        # connect requests: a WebSocket upgrade (GET) needs ``create`` like the POST form
        return "create"
    if method in ("GET", "HEAD") and not has_name:
        return "watch" if watch else "list"
    if method == "DELETE" and not has_name:
        return "deletecollection"
    if method in ("GET", "HEAD") and has_name and watch:
        return "watch"
    return _ITEM_VERBS.get(method, method.lower())


def forbidden_message(attrs: Attributes) -> str:
    """``User "x" cannot <verb> ...`` (responsewriters.forbiddenMessage)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.resource_and_subresource
    if attrs.namespace:
        return (f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
                f'"{attrs.api_group}" in the namespace "{attrs.namespace}"')
    return (f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" at the cluster scope')


def forbidden_error(attrs: Attributes, reason: str = "") -> ApiStatusError:
    """The 403 Status for a refused request (``<resource> "<name>" is forbidden: ...``)."""
    detail = forbidden_message(attrs)
    if reason:
        detail = f"{detail}: {reason}"
    if not attrs.resource_request:
        return ApiStatusError(403, "Forbidden", f"forbidden: {detail}", {})
    return forbidden(attrs.api_group, attrs.resource, attrs.name, detail)


__all__ = ["Attributes", "Decision", "forbidden_error", "forbidden_message", "resource_verb"]
