"""OpenAPI v3 structural-schema handling of custom resources: prune, default, validate.

A CRD's ``openAPIV3Schema`` decides what a custom resource may contain.  Like
the real server we first prune fields the schema does not declare (reporting
them, so ``fieldValidation=Strict`` can refuse them), then apply defaults and
drop non-nullable nulls, then validate types, required fields, enums, bounds,
lengths, patterns, item counts, formats and list-type uniqueness.  Error
texts follow apiextensions' conversion of kube-openapi results into field
errors as kube-apiserver 1.32 prints them: the offending value (a string, a
number, or for minItems/minProperties the count found), except for type
mismatches, where kube-openapi reports the JSON type found.
``x-kubernetes-validations`` (CEL) are not evaluated: Python admission hooks
implement those rules (a failed rule prints the schema type, not the value).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ovnk_core.admission.contract import type_name
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError, go_value
from ovnk_local.apiserver.formats import format_ok

META_FIELDS = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields"))
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _preserves(schema: JSON) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields"))


def prune(value: Any, schema: JSON, path: str, unknown: list[str], root: bool = False) -> Any:
    """Drop undeclared fields (recording their paths), apply defaults, drop bad nulls."""
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        embedded = root or schema.get("x-kubernetes-embedded-resource")
        for key in list(value):
            child_path = _join(path, key)
            if embedded and key in ("apiVersion", "kind"):
                continue
            if embedded and key == "metadata":
                _prune_metadata(value[key], child_path, unknown)
                continue
            if isinstance(properties, dict) and key in properties:
                child_schema = properties[key]
            elif isinstance(additional, dict):
                child_schema = additional
            elif additional is True or _preserves(schema) or (
                    properties is None and additional is None and not schema.get("type")):
                continue
            else:
                unknown.append(child_path)
                del value[key]
                continue
            if value[key] is None and not child_schema.get("nullable"):
                del value[key]
            else:
                value[key] = prune(value[key], child_schema, child_path, unknown)
        for key, child_schema in (properties or {}).items():
            if key not in value and isinstance(child_schema, dict) and "default" in child_schema:
                value[key] = prune(copy.deepcopy(child_schema["default"]), child_schema,
                                   _join(path, key), [])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            value[index] = prune(item, schema["items"], f"{path}[{index}]", unknown)
    return value


def _prune_metadata(metadata: Any, path: str, unknown: list[str]) -> None:
    if isinstance(metadata, dict):
        for key in [k for k in metadata if k not in META_FIELDS]:
            unknown.append(_join(path, key))
            del metadata[key]


def validate(value: Any, schema: JSON, path: str, root: bool = False) -> list[FieldError]:
    """Every schema violation of ``value`` (already pruned and defaulted)."""
    name = path or "body"
    if value is None:
        if schema.get("nullable"):
            return []
        wanted = schema.get("type")
        return [FieldError("TypeInvalid", path, "null",
                           f"{name} in body must be of type {wanted}: \"null\"")] if wanted else []
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, str) and type_name(value) != "integer":
            return [FieldError("TypeInvalid", path, type_name(value),
                               f"{name} in body must be of type integer,string: "
                               f"\"{type_name(value)}\"")]
    elif not _type_ok(value, schema.get("type")):
        return [FieldError("TypeInvalid", path, type_name(value),
                           f"{name} in body must be of type {schema.get('type')}: "
                           f"\"{type_name(value)}\"")]
    errors = _value_checks(value, schema, path, name)
    for keyword in ("allOf", "anyOf", "oneOf", "not"):
        if keyword in schema:
            errors += _combinators(value, schema, keyword, path, name)
    if isinstance(value, dict):
        errors += _validate_object(value, schema, path, name, root)
    elif isinstance(value, list):
        errors += _validate_array(value, schema, path, name)
    return errors


def _type_ok(value: Any, wanted: Any) -> bool:
    if not wanted:
        return True
    if wanted == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = _TYPES.get(str(wanted))
    return expected is None or isinstance(value, expected)


def _value_checks(value: Any, schema: JSON, path: str, name: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(FieldError("NotSupported", path, value,
                                 supported=tuple(schema["enum"])))
    if isinstance(value, int | float) and not isinstance(value, bool):
        errors += _number_checks(value, schema, path, name)
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(FieldError("TooLong", path, value,
                                     f"may not be more than {schema['maxLength']} bytes"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(FieldError("Invalid", path, value, f"{name} in body should be at "
                                     f"least {schema['minLength']} chars long"))
        if "pattern" in schema and not _pattern_ok(schema["pattern"], value):
            errors.append(FieldError("Invalid", path, value,
                                     f"{name} in body should match '{schema['pattern']}'"))
        fmt = schema.get("format")
        if fmt and not format_ok(str(fmt), value):
            errors.append(FieldError("TypeInvalid", path, value,
                                     f"{name} in body must be of type {fmt}: {go_value(value)}"))
    return errors


def _pattern_ok(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True


def _number_checks(value: float, schema: JSON, path: str, name: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "minimum" in schema:
        bound, exclusive = schema["minimum"], schema.get("exclusiveMinimum") is True
        if value < bound or (exclusive and value == bound):
            words = "greater than" if exclusive else "greater than or equal to"
            errors.append(FieldError("Invalid", path, value,
                                     f"{name} in body should be {words} {go_value(bound)}"))
    if "maximum" in schema:
        bound, exclusive = schema["maximum"], schema.get("exclusiveMaximum") is True
        if value > bound or (exclusive and value == bound):
            words = "less than" if exclusive else "less than or equal to"
            errors.append(FieldError("Invalid", path, value,
                                     f"{name} in body should be {words} {go_value(bound)}"))
    multiple = schema.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        errors.append(FieldError("Invalid", path, value, f"{name} in body should be a "
                                 f"multiple of {go_value(multiple)}"))
    return errors


def _combinators(value: Any, schema: JSON, keyword: str, path: str,
                 name: str) -> list[FieldError]:
    if keyword == "not":
        if not validate(value, schema["not"], path):
            return [FieldError("Invalid", path, value,
                               f"{name} in body should not validate the given schema")]
        return []
    results = [validate(value, sub, path) for sub in schema[keyword] if isinstance(sub, dict)]
    if keyword == "allOf":
        return [e for result in results for e in result]
    passing = sum(1 for result in results if not result)
    if keyword == "anyOf" and passing == 0:
        return [FieldError("Invalid", path, value,
                           f"{name} in body must validate at least one schema (anyOf)")]
    if keyword == "oneOf" and passing != 1:
        return [FieldError("Invalid", path, value,
                           f"{name} in body must validate one and only one schema (oneOf)")]
    return []


def _validate_object(value: JSON, schema: JSON, path: str, name: str,
                     root: bool) -> list[FieldError]:
    errors = [FieldError("Required", _join(path, key), OMIT)
              for key in schema.get("required") or [] if key not in value]
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(FieldError("Invalid", path, len(value), f"{name} in body should have at "
                                 f"least {schema['minProperties']} properties"))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(FieldError("TooMany", path, len(value),
                                 f"must have at most {schema['maxProperties']} items"))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, child in value.items():
        if (root or schema.get("x-kubernetes-embedded-resource")) and key in (
                "apiVersion", "kind", "metadata"):
            continue
        child_schema = properties.get(key) if key in properties else (
            additional if isinstance(additional, dict) else None)
        if isinstance(child_schema, dict):
            errors += validate(child, child_schema, _join(path, key))
    return errors


def _validate_array(value: list[Any], schema: JSON, path: str, name: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(FieldError("Invalid", path, len(value), f"{name} in body should have at "
                                 f"least {schema['minItems']} items"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError("TooMany", path, len(value),
                                 f"must have at most {schema['maxItems']} items"))
    list_type = schema.get("x-kubernetes-list-type")
    if schema.get("uniqueItems") or list_type == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                errors.append(FieldError("Duplicate", f"{path}[{index}]", item))
            seen.append(item)
    if list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[Any] = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                identity = {k: item.get(k) for k in keys}
                if identity in seen_keys:
                    errors.append(FieldError("Duplicate", f"{path}[{index}]", identity))
                seen_keys.append(identity)
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            errors += validate(item, items, f"{path}[{index}]")
    return errors


def check_custom_resource(obj: JSON, schema: JSON | None) -> tuple[list[FieldError], list[str]]:
    """Prune, default and validate ``obj`` in place: ``(errors, unknown field paths)``."""
    unknown: list[str] = []
    if not schema:
        return [], unknown
    prune(obj, schema, "", unknown, root=True)
    return validate(obj, schema, "", root=True), unknown
