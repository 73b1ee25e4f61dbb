"""Strategic merge patch for built-in kinds, driven by a table of merge keys.

kubectl's client-side apply, ``kubectl patch`` (default type) and
controllers written against client-go send strategic merge patches.  Maps
merge; lists whose path has a merge key (``spec.containers`` by ``name``,
``status.conditions`` by ``type``, ...) merge item by item; lists marked with
an empty key (``metadata.finalizers``) merge as sets of primitives; any
other list is replaced.  The directives ``$patch`` (merge/replace/delete),
``$retainKeys``, ``$setElementOrder/<field>`` and
``$deleteFromPrimitiveList/<field>`` are honoured.
"""

from __future__ import annotations

import copy
from typing import Any

from ovnk_local.apiserver.errors import JSON, bad_request

PATCH = "$patch"
RETAIN = "$retainKeys"
ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def strategic_merge(original: JSON, patch: JSON, merge_keys: dict[str, str]) -> JSON:
    """``original`` with ``patch`` applied, without touching either argument."""
    result = _merge_map(copy.deepcopy(original), patch, merge_keys, "")
    return result if isinstance(result, dict) else {}


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _strip(value: Any, merge_keys: dict[str, str], path: str) -> Any:
    """A patch value placed where nothing existed: directives removed, deletes dropped."""
    if isinstance(value, dict):
        merged = _merge_map({}, value, merge_keys, path)
        return merged if merged is not None else None
    if isinstance(value, list):
        return [_strip(item, merge_keys, path) for item in value
                if not (isinstance(item, dict) and item.get(PATCH) == "delete")]
    return copy.deepcopy(value)


def _merge_map(original: JSON, patch: JSON, merge_keys: dict[str, str],
               path: str) -> JSON | None:
    directive = patch.get(PATCH)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: _strip(v, merge_keys, _child(path, k)) for k, v in patch.items()
                if not k.startswith("$")}
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive}")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(ORDER):
            orders[key[len(ORDER):]] = list(value or [])
        elif key.startswith(DELETE_PRIMITIVE):
            field = key[len(DELETE_PRIMITIVE):]
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [v for v in current if v not in (value or [])]
        elif key.startswith("$"):
            continue
        elif value is None:
            original.pop(key, None)
        elif isinstance(value, dict) and isinstance(original.get(key), dict):
            merged = _merge_map(original[key], value, merge_keys, _child(path, key))
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list) and _child(path, key) in merge_keys:
            original[key] = _merge_list(original.get(key), value, merge_keys, _child(path, key))
        else:
            stripped = _strip(value, merge_keys, _child(path, key))
            if stripped is None:
                original.pop(key, None)
            else:
                original[key] = stripped
    if RETAIN in patch:
        keep = set(patch[RETAIN] or [])
        for key in [k for k in original if k not in keep]:
            del original[key]
    for field, order in orders.items():
        if isinstance(original.get(field), list):
            original[field] = _ordered(original[field], order, merge_keys.get(
                _child(path, field), ""))
    return original


def _merge_list(original: Any, patch: list[Any], merge_keys: dict[str, str],
                path: str) -> list[Any]:
    key = merge_keys[path]
    current = list(original) if isinstance(original, list) else []
    if any(isinstance(i, dict) and i.get(PATCH) == "replace" and len(i) == 1 for i in patch):
        return [_strip(i, merge_keys, path) for i in patch
                if not (isinstance(i, dict) and PATCH in i and len(i) == 1)]
    if not key:
        return current + [copy.deepcopy(v) for v in patch if v not in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {key}")
        index = next((i for i, old in enumerate(current)
                      if isinstance(old, dict) and old.get(key) == item[key]), None)
        if item.get(PATCH) == "delete":
            if index is not None:
                del current[index]
        elif index is None:
            current.append(_strip(item, merge_keys, path))
        else:
            merged = _merge_map(current[index], item, merge_keys, path)
            if merged is None:
                del current[index]
            else:
                current[index] = merged
    return current


def _ordered(items: list[Any], order: list[Any], key: str) -> list[Any]:
    def identity(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [identity(o) if isinstance(o, dict) else o for o in order]
    positions = {repr(v): i for i, v in enumerate(wanted)}
    return sorted(items, key=lambda item: positions.get(repr(identity(item)), len(wanted)))
