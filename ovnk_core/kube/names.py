"""Kubernetes' name rules (apimachinery's validation package): DNS-1123 labels and
subdomains, DNS-1035 labels, path segments, qualified names (label and annotation keys) and
label values, with the messages the real server prints.

Kept in ``kube`` (below every user) because the API server stand-in validates object names
and labels with them and ovnk's controllers check label selectors with them.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{_DNS1123_SUBDOMAIN}')")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_DNS1123_LABEL}')")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{_DNS1035_LABEL}')")
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')")
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_QUALIFIED_NAME}')")

def full_match(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def name_errors(name: str, rule: str, prefix: bool = False) -> list[str]:
    """Problems of ``name`` under ``rule`` (``subdomain``, ``label``, ``dns1035``, ``path``).

    ``prefix``: ``name`` is a ``generateName``, checked as apimachinery checks a prefix: a
    trailing ``-`` is allowed (its ``maskTrailingDash`` replaces the last two characters by
    ``a``) and a path-segment prefix may be ``.`` or ``..``.
    """
    if rule == "path":
        if name in (".", "..") and not prefix:
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in "/%" if c in name]
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-2] + "a"
    if rule == "label":
        problems = [] if full_match(_DNS1123_LABEL, name) else [LABEL_MSG]
        limit = 63
    elif rule == "dns1035":
        problems = [] if full_match(_DNS1035_LABEL, name) else [DNS1035_MSG]
        limit = 63
    else:
        problems = [] if full_match(_DNS1123_SUBDOMAIN, name) else [SUBDOMAIN_MSG]
        limit = 253
    if len(name) > limit:
        problems.insert(0, f"must be no more than {limit} characters")
    return problems


def qualified_name_errors(key: str) -> list[str]:
    """Problems of a label key or annotation key (``prefix/name``), as apimachinery's
    ``IsLabelKey`` words them (Kubernetes 1.35+: "a valid label key", was "a qualified
    name")."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a valid label key " + QUALIFIED_NAME_MSG.replace("name part ", "")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    prefix, name = parts if len(parts) == 2 else ("", parts[0])
    problems: list[str] = []
    if len(parts) == 2 and not prefix:
        problems.append("prefix part must be non-empty")
    elif prefix:
        problems += ["prefix part " + msg for msg in name_errors(prefix, "subdomain")]
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not full_match(_QUALIFIED_NAME, name):
            problems.append(QUALIFIED_NAME_MSG)
    return problems


__all__ = ["DNS1035_MSG", "LABEL_MSG", "LABEL_VALUE", "LABEL_VALUE_MSG", "QUALIFIED_NAME_MSG",
           "SUBDOMAIN_MSG", "full_match", "name_errors", "qualified_name_errors"]
