"""A namespace's ``k8s.ovn.org/acl-logging`` annotation: the severities its ACLs log at.

``{"deny": "alert", "allow": "notice"}``: a policy's allow ACLs log at ``allow``, the
namespace's default-deny drop ACLs at ``deny``; a missing or unknown severity logs nothing
for that action (upstream ignores an unusable value the same way, and so does the rest of
the annotation stay in force).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

ANNOTATION = "k8s.ovn.org/acl-logging"
SEVERITIES = ("alert", "warning", "notice", "info", "debug")


@dataclass(frozen=True)
class AclLogging:
    allow: str = ""
    deny: str = ""


def parse_acl_logging(annotations: Mapping[str, str] | None) -> AclLogging:
    raw = (annotations or {}).get(ANNOTATION)
    if not raw:
        return AclLogging()
    try:
        value = json.loads(raw)
    except ValueError:
        return AclLogging()
    if not isinstance(value, dict):
        return AclLogging()

    def severity(key: str) -> str:
        level = value.get(key)
        return level if isinstance(level, str) and level in SEVERITIES else ""

    return AclLogging(allow=severity("allow"), deny=severity("deny"))
