"""metav1.LabelSelector matching, and apimachinery's refusals of malformed selectors."""

from __future__ import annotations

from typing import Any

import pytest

from ovnk_core.kube.names import LABEL_VALUE_MSG, QUALIFIED_NAME_MSG
from ovnk_core.kube.selectors import selector_matches, selector_problem

LABELS = {"team": "blue", "tier": "web"}


@pytest.mark.parametrize(("selector", "matches"), [
    ({}, True), (None, True),
    ({"matchLabels": {"team": "blue"}}, True),
    ({"matchLabels": {"team": "red"}}, False),
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["red", "blue"]}]}, True),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["blue"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
])
def test_valid_selectors_match(selector: dict[str, Any] | None, matches: bool) -> None:
    assert selector_problem(selector) is None
    assert selector_matches(selector, LABELS) is matches


@pytest.mark.parametrize(("selector", "message"), [
    ({"matchExpressions": [{"key": "team", "operator": "In"}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be "
     "empty"),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": []}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be "
     "empty"),
    ({"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]},
     f'key: Invalid value: "bad key!": {QUALIFIED_NAME_MSG}'),
    ({"matchLabels": {"-team": "blue"}},
     f'key: Invalid value: "-team": {QUALIFIED_NAME_MSG}'),
    ({"matchLabels": {"team": "blue!"}},
     f'values[0]: Invalid value: "blue!": {LABEL_VALUE_MSG}'),
    ({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]},
     'values: Invalid value: ["a"]: values set must be empty for exists and does not '
     "exist"),
    ({"matchExpressions": [{"key": "team", "operator": "Matches", "values": ["a"]}]},
     '"Matches" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "bad key", "operator": "In"}]},
     f'[key: Invalid value: "bad key": {QUALIFIED_NAME_MSG}, values: Invalid value: '
     "null: for 'in', 'notin' operators, values set can't be empty]"),
])
def test_malformed_selectors_are_refused_not_matched(selector: dict[str, Any],
                                                     message: str) -> None:
    assert selector_problem(selector) == message
    with pytest.raises(ValueError) as info:
        selector_matches(selector, LABELS)
    assert str(info.value) == message
