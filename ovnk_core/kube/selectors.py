"""Matching objects against a ``metav1.LabelSelector`` (matchLabels + matchExpressions).

Used wherever a custom resource selects namespaces or pods (CUDN
``namespaceSelector``, EgressIP selectors).  An empty selector matches
everything, as in Kubernetes; a malformed one raises ``ValueError`` with the
reason, which callers turn into a status condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        key = requirement.get("key")
        operator = requirement.get("operator")
        values = requirement.get("values") or []
        if operator == "In":
            ok = key in labels and labels[key] in values
        elif operator == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif operator == "Exists":
            ok = key in labels
        elif operator == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError(f"invalid label selector operator {operator!r} "
                             "(In, NotIn, Exists, DoesNotExist)")
        if not ok:
            return False
    return True
