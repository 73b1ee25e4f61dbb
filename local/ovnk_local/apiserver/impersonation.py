"""Impersonation: ``kubectl --as USER [--as-group G]`` acts as someone else, if allowed.

The ``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` headers replace the requester, after the real
requester was authorized to ``impersonate`` each of them (``users``,
``groups``, ``serviceaccounts`` in core, ``uids`` and ``userextras/<key>`` in
authentication.k8s.io), exactly as kube-apiserver's impersonation filter does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import unquote

from ovnk_local.apiserver.authn import ANONYMOUS_USER, UserInfo, with_authenticated
from ovnk_local.apiserver.authz import Attributes, Decision, forbidden_error
from ovnk_local.apiserver.errors import bad_request
from ovnk_local.apiserver.serviceaccount_tokens import service_account_groups, split_username

USER, GROUP, UID, EXTRA = ("Impersonate-User", "Impersonate-Group", "Impersonate-Uid",
                           "Impersonate-Extra-")


def _header_values(headers: object, name: str) -> list[str]:
    get_all = getattr(headers, "get_all", None)
    if get_all is not None:
        return [str(v) for v in get_all(name) or []]
    value = headers.get(name) if isinstance(headers, Mapping) else None
    return [str(value)] if value is not None else []


def impersonated(requester: UserInfo, headers: object,
                 authorize: Callable[[Attributes], Decision]) -> UserInfo:
    """The user to act as (``requester`` itself when no Impersonate-* header is sent)."""
    users = _header_values(headers, USER)
    groups = _header_values(headers, GROUP)
    uids = _header_values(headers, UID)
    keys: list[str] = list(getattr(headers, "keys", list)())
    extra_keys = sorted({k for k in keys if k.lower().startswith(EXTRA.lower())})
    if not users:
        if groups or uids or extra_keys:
            raise bad_request("requested impersonation of groups, uid or extra without "
                              "impersonating a user")
        return requester
    if len(users) > 1 or len(uids) > 1:
        raise bad_request("only one Impersonate-User and one Impersonate-Uid may be sent")
    name = users[0]

    def check(verb_target: Attributes) -> None:
        decision = authorize(verb_target)
        if not decision.allowed:
            raise forbidden_error(verb_target, decision.reason)

    sa = split_username(name)
    if sa is not None:
        check(Attributes(requester, "impersonate", True, "", "v1", "serviceaccounts", "",
                         sa[0], sa[1]))
    else:
        check(Attributes(requester, "impersonate", True, "", "v1", "users", "", "", name))
    for group in groups:
        check(Attributes(requester, "impersonate", True, "", "v1", "groups", "", "", group))
    if uids:
        check(Attributes(requester, "impersonate", True, "authentication.k8s.io", "v1",
                         "uids", "", "", uids[0]))
    extra: dict[str, tuple[str, ...]] = {}
    for header in extra_keys:
        key = unquote(header[len(EXTRA):]).lower()
        values = tuple(_header_values(headers, header))
        for value in values:
            check(Attributes(requester, "impersonate", True, "authentication.k8s.io", "v1",
                             "userextras", key, "", value))
        extra[key] = values
    if sa is not None and not groups:
        result_groups: tuple[str, ...] = service_account_groups(sa[0])
    elif name == ANONYMOUS_USER:
        result_groups = tuple(groups)
    else:
        result_groups = with_authenticated(groups)
    return UserInfo(name, result_groups, uids[0] if uids else "", extra)


__all__ = ["impersonated"]
