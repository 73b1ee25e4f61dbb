"""A namespace's ``k8s.ovn.org/acl-logging`` annotation: the severities its ACLs log at.

``{"deny": "alert", "allow": "notice"}``: a policy's allow ACLs log at ``allow``, the
namespace's default-deny drop ACLs at ``deny`` (upstream's ``getLogSeverity``); an ACL with
a severity has ``log=true``.  As upstream's ``aclLoggingUpdateNsInfo``: an annotation that is
not JSON disables both, an unknown severity disables that action only (the other stays in
force), and each problem is reported (``AclLogging.problems``, upstream's error texts) so
the controller can say so in a Warning event on the namespace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

ANNOTATION = "k8s.ovn.org/acl-logging"
SEVERITIES = ("alert", "warning", "notice", "info", "debug")
INVALID_REASON = "InvalidACLLogging"


@dataclass(frozen=True)
class AclLogging:
    allow: str = ""
    deny: str = ""
    problems: tuple[str, ...] = ()

    def warning(self, namespace: str) -> str:
        """Upstream's warning for a malformed annotation, with what is in force."""
        return (f"Namespace {namespace}: ACL logging contained malformed annotation, ACL "
                f"logging is set to deny={self.deny} allow={self.allow}, err: "
                f"{'; '.join(self.problems)!r}")


def parse_acl_logging(annotations: Mapping[str, str] | None) -> AclLogging:
    raw = (annotations or {}).get(ANNOTATION)
    if not raw or raw == "{}":
        return AclLogging()
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return AclLogging(problems=(f"could not unmarshal namespace ACL annotation '{raw}', "
                                    f"disabling logging, err: {exc}",))
    if not isinstance(value, dict):
        return AclLogging(problems=(f"could not unmarshal namespace ACL annotation '{raw}', "
                                    "disabling logging, err: not a JSON object",))
    problems = []

    def severity(key: str, problem: str) -> str:
        level = value.get(key, "")
        if isinstance(level, str) and (level in SEVERITIES or not level):
            return level
        problems.append(f"{problem} {json.dumps(level)} is not a valid log severity")
        return ""

    deny = severity("deny", "disabling deny logging due to invalid deny annotation.")
    allow = severity("allow", "disabling allow logging due to an invalid allow annotation.")
    return AclLogging(allow=allow, deny=deny, problems=tuple(problems))
