"""Matching objects against a ``metav1.LabelSelector`` (matchLabels + matchExpressions).

Used wherever a custom resource selects namespaces or pods (CUDN
``namespaceSelector``, EgressIP selectors).  An empty selector matches
everything, as in Kubernetes.  A malformed one — an unknown operator, a key
or value that is not a valid label, ``In``/``NotIn`` without values,
``Exists``/``DoesNotExist`` with values — raises ``ValueError`` with the
message of apimachinery's ``LabelSelectorAsSelector`` (a CRD's schema does
not check selectors, so a real API server accepts them and the controller
reports them); callers turn it into a status condition.  It never matches
nothing silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ovnk_core.kube.names import LABEL_VALUE_MSG, qualified_name_errors

OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _go_strings(values: Any) -> str:
    """A ``[]string`` as ``field.Invalid`` prints it since Kubernetes 1.34: JSON (``null``
    for the empty list ``LabelSelectorAsSelector`` passes)."""
    if not values:
        return "null"
    return json.dumps([str(v) for v in values], separators=(",", ":"))


def _requirement_errors(key: Any, operator: str, values: list[Any]) -> list[str]:
    """apimachinery's ``labels.NewRequirement`` checks, with its messages."""
    errors = [f'key: Invalid value: {json.dumps(str(key))}: {problem}'
              for problem in qualified_name_errors(str(key))]
    if operator in ("in", "notin") and not values:
        errors.append(f"values: Invalid value: {_go_strings(values)}: for 'in', 'notin' "
                      "operators, values set can't be empty")
    if operator in ("exists", "!") and values:
        errors.append(f"values: Invalid value: {_go_strings(values)}: values set must be "
                      "empty for exists and does not exist")
    if operator == "=" and len(values) != 1:
        errors.append(f"values: Invalid value: {_go_strings(values)}: exact-match "
                      "compatibility requires one single value")
    for index, value in enumerate(values):
        text = str(value)
        if len(text) > 63:
            errors.append(f"values[{index}]: Invalid value: {json.dumps(text)}: must be no more "
                          "than 63 characters")
        if not _is_label_value(text):
            errors.append(f"values[{index}]: Invalid value: {json.dumps(text)}: "
                          f"{LABEL_VALUE_MSG}")
    return errors


def _is_label_value(text: str) -> bool:
    return text == "" or (text[0].isascii() and text[0].isalnum() and text[-1].isascii()
                          and text[-1].isalnum()
                          and all(c.isascii() and (c.isalnum() or c in "-_.") for c in text))


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def selector_problem(selector: Mapping[str, Any] | None) -> str | None:
    """Why ``LabelSelectorAsSelector`` would refuse ``selector`` (``None``: it is valid).
    Like apimachinery, the first failing requirement is reported (matchLabels first, in
    key order, then matchExpressions in order)."""
    if not selector:
        return None
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        errors = _requirement_errors(key, "=", [value])
        if errors:
            return _aggregate(errors)
    for requirement in selector.get("matchExpressions") or []:
        operator = requirement.get("operator")
        if operator not in OPERATORS:
            return f"{json.dumps(str(operator))} is not a valid label selector operator"
        errors = _requirement_errors(requirement.get("key"), OPERATORS[operator],
                                     list(requirement.get("values") or []))
        if errors:
            return _aggregate(errors)
    return None


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` match ``selector``.

    :raises ValueError: the selector is malformed (``selector_problem``'s message).
    """
    problem = selector_problem(selector)
    if problem:
        raise ValueError(problem)
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
        else:
            ok = key not in labels
        if not ok:
            return False
    return True
