"""Field errors of the UDN/CUDN rules, worded as kube-apiserver 1.36 words each kind of rule.

The Python rules (``ovnk_core.udn.validation`` and the topology plugins' sections,
``ovnk_core.udn_section``) stand in for two different validators of a real API
server, and each prints the offending value its own way:

* a failed CEL rule (``x-kubernetes-validations``) prints the value of the
  node that declares it when that is a scalar (``spec.flat.subnets[0]: Invalid
  value: "300.0.0.0/24": CIDR is invalid``, ``spec.flat.mtu: Invalid value:
  1400: mtu is immutable``) and no value for an object or array
  (``spec.flat.subnets: Invalid value: When 2 CIDRs are set, they must be from
  different IP families``), as apiextensions does since Kubernetes
  1.35 (before, it printed the schema type: ``Invalid value: "string"``);
* a failed OpenAPI keyword prints what apiextensions makes of kube-openapi's
  result: the value for bounds and lengths (``Invalid value: 100: ... should be
  greater than or equal to 576``), the count found for minItems/minProperties
  (``Invalid value: 0: ... should have at least 1 items``), the JSON type found
  for a type mismatch, ``Required value``, ``Unsupported value: "X": supported
  values: ...``, ``Too many: 3: must have at most 2 items`` and ``Too long: may
  not be more than 253 bytes``.

``FieldError`` is a CEL failure unless built by one of the keyword functions: its
``value`` is the node's own value for a rule on a scalar, left out (``OMIT``) for a
rule on an object or array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovnk_core.admission.contract import OMIT, type_name
from ovnk_core.admission.contract import FieldError as ApiFieldError

_VALUELESS = ("Required", "TooLong")


@dataclass(frozen=True)
class FieldError:
    """One rule failure: the field path, the message and what the server prints before it."""

    field: str
    message: str
    value: Any = OMIT  # a CEL rule: the node's value if a scalar; a keyword: see module doc
    kind: str = "Invalid"  # the field.Error type: Invalid, TypeInvalid, Required, ...
    supported: tuple[str, ...] = ()

    def to_api(self) -> ApiFieldError:
        """The API server's field error (its text, reason and cause)."""
        value = OMIT if self.kind in _VALUELESS else self.value
        return ApiFieldError(self.kind, self.field, value, self.message, self.supported)

    def __str__(self) -> str:
        return str(self.to_api())


def required(path: str) -> FieldError:
    """``<path>: Required value`` (a ``required`` property is missing)."""
    return FieldError(path, "", kind="Required")


def unsupported(path: str, value: Any, allowed: tuple[str, ...]) -> FieldError:
    """``<path>: Unsupported value: "X": supported values: "A", "B"`` (an enum)."""
    return FieldError(path, "", value, kind="NotSupported", supported=allowed)


def wrong_type(path: str, value: Any, wanted: str) -> FieldError:
    """``<path>: Invalid value: "string": <path> in body must be of type integer: "string"``."""
    found = type_name(value)
    return FieldError(path, f'{path} in body must be of type {wanted}: "{found}"', found,
                      kind="TypeInvalid")


def too_few_items(path: str, count: int, minimum: int) -> FieldError:
    return FieldError(path, f"{path} in body should have at least {minimum} items", count)


def too_many_items(path: str, count: int, maximum: int) -> FieldError:
    return FieldError(path, f"must have at most {maximum} items", count, kind="TooMany")


def too_few_properties(path: str, count: int, minimum: int) -> FieldError:
    return FieldError(path, f"{path} in body should have at least {minimum} properties", count)


def too_long(path: str, maximum: int) -> FieldError:
    return FieldError(path, f"may not be more than {maximum} bytes", kind="TooLong")


def too_short(path: str, value: str, minimum: int) -> FieldError:
    return FieldError(path, f"{path} in body should be at least {minimum} chars long", value)


def integer_errors(path: str, value: Any, minimum: int, maximum: int) -> list[FieldError]:
    """An ``integer`` with ``minimum``/``maximum``: the type, then the bound it breaks."""
    if not isinstance(value, int) or isinstance(value, bool):
        return [wrong_type(path, value, "integer")]
    if value < minimum:
        return [FieldError(path, f"{path} in body should be greater than or equal to {minimum}",
                           value)]
    if value > maximum:
        return [FieldError(path, f"{path} in body should be less than or equal to {maximum}",
                           value)]
    return []


def list_errors(path: str, value: Any, minimum: int, maximum: int) -> list[FieldError]:
    """An ``array`` with ``minItems``/``maxItems``."""
    if not isinstance(value, list):
        return [wrong_type(path, value, "array")]
    if len(value) < minimum:
        return [too_few_items(path, len(value), minimum)]
    if len(value) > maximum:
        return [too_many_items(path, len(value), maximum)]
    return []
