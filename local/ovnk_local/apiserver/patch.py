"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), plus the patch type dispatch.

A PATCH request is applied to the current object; the result then goes
through the same path as a PUT (status rules, validation, admission,
optimistic concurrency).  Strategic merge patch lives in ``strategic.py``;
server-side apply is approximated here as a merge patch of the applied
configuration (see ``apply_patch``), its manager recorded in managedFields.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from ovnk_local.apiserver import nesting
from ovnk_local.apiserver.errors import JSON, ApiStatusError, bad_request, unsupported_media_type
from ovnk_local.apiserver.strategic import strategic_merge
from ovnk_local.apiserver.text import check_unicode

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
CUSTOM_TYPES = (JSON_PATCH, MERGE, APPLY)
BUILTIN_TYPES = (JSON_PATCH, MERGE, STRATEGIC, APPLY)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class JsonPatchError(Exception):
    """An operation of a JSON patch does not apply to the document."""


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], op: str, path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise JsonPatchError(f"{op} operation does not apply: doc is missing path: {path}")
    return node


def _get(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, op, path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise JsonPatchError(f"{op} operation does not apply: doc is missing path: {path}")


def _remove(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    parent = _parent(doc, parts, op, path)
    last = parts[-1] if parts else ""
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise JsonPatchError(f"{op} operation does not apply: doc is missing path: {path}")


def _add(doc: Any, path: str, value: Any, op: str, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _parent(doc, parts, op, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise JsonPatchError(f"replace operation does not apply: doc is missing key: {path}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise JsonPatchError(f"{op} operation does not apply: index out of range: {path}")
    else:
        raise JsonPatchError(f"{op} operation does not apply: doc is missing path: {path}")
    return doc


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch to a copy of ``doc``."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result = copy.deepcopy(doc)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise bad_request(f"invalid JSON patch operation: {json.dumps(operation)}")
        op, path = operation["op"], str(operation.get("path", ""))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise JsonPatchError(f"{op} operation: missing value")
        value = copy.deepcopy(operation.get("value"))
        if op == "add":
            result = _add(result, path, value, op)
        elif op == "remove":
            _remove(result, path, op)
        elif op == "replace":
            result = _add(result, path, value, op, replace=True)
        elif op == "test":
            if _get(result, path, op) != value:
                raise JsonPatchError(f"testing value {path} failed: test failed")
        elif op in ("move", "copy"):
            source = str(operation.get("from", ""))
            moved = (_remove(result, source, op) if op == "move"
                     else copy.deepcopy(_get(result, source, op)))
            result = _add(result, path, moved, op)
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return result


def decode_patch(body: bytes, content_type: str) -> Any:
    """Parse a patch body (JSON, or YAML for apply); 400 when it does not parse or holds
    an unpaired surrogate (``text.check_unicode``)."""
    if content_type != APPLY:
        patch = nesting.loads(body or b"null", "patch")
    else:
        try:
            patch = yaml.safe_load(body.decode() or "{}")
        except RecursionError:
            raise bad_request(f"error decoding patch: {nesting.TOO_DEEP}") from None
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"error decoding patch: {exc}") from exc
        nesting.check_decoded(patch, "patch")
    check_unicode(patch, "patch")
    return patch


def apply_patch(current: JSON, patch: Any, content_type: str, merge_keys: dict[str, str],
                custom: bool) -> JSON:
    """The object after applying ``patch`` of ``content_type`` to ``current``.

    Server-side apply (``application/apply-patch+yaml``) is approximated as a JSON merge
    patch of the applied configuration: fields the manager stops applying are not removed
    and there is no conflict detection between managers.
    """
    accepted = CUSTOM_TYPES if custom else BUILTIN_TYPES
    if content_type not in accepted:
        raise unsupported_media_type(accepted)
    try:
        if content_type == JSON_PATCH:
            result = json_patch(current, patch)
        elif content_type == STRATEGIC:
            if not isinstance(patch, dict):
                raise bad_request("strategic merge patch must be a JSON object")
            result = strategic_merge(current, patch, merge_keys)
        else:
            if content_type == APPLY and not isinstance(patch, dict):
                raise bad_request("apply patch must be a YAML or JSON object")
            result = merge_patch(current, patch)
    except JsonPatchError as exc:
        raise ApiStatusError(
            422, "Invalid", "the server rejected our request due to an error in our request",
            {"causes": [{"reason": "UnexpectedServerResponse", "message": str(exc)}]}) from exc
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    return result
