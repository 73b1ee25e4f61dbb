"""The UDN/CUDN validation rules as admission hooks of the local API server.

A real cluster evaluates the CRDs' CEL rules at ``kubectl apply``; the local
API server cannot, so these hooks run the same rules (``udn.validation``)
and reject with the message a real server prints.  Registered through the
``ovnk.admission`` entry point, so ``python -m ovnk_core.apiserver`` loads
them by itself.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.apiserver.admission import AdmissionRegistry
from ovnk_core.apiserver.errors import FieldError as ApiFieldError
from ovnk_core.udn.field_errors import FieldError
from ovnk_core.udn.validation import validate_cudn, validate_udn


def _to_api(errors: list[FieldError]) -> list[ApiFieldError]:
    return [error.to_api() for error in errors]


def validate_udn_hook(operation: str, new: dict[str, Any] | None,
                      old: dict[str, Any] | None) -> list[ApiFieldError] | None:
    if new is None or operation == "DELETE":
        return None
    errors = validate_udn(new, old if operation == "UPDATE" else None)
    return _to_api(errors) or None


def validate_cudn_hook(operation: str, new: dict[str, Any] | None,
                       old: dict[str, Any] | None) -> list[ApiFieldError] | None:
    if new is None or operation == "DELETE":
        return None
    errors = validate_cudn(new, old if operation == "UPDATE" else None)
    return _to_api(errors) or None


def register(registry: AdmissionRegistry) -> None:
    registry.register_validating("k8s.ovn.org", "userdefinednetworks", validate_udn_hook,
                                 name="udn-validation", operations=("CREATE", "UPDATE"))
    registry.register_validating("k8s.ovn.org", "clusteruserdefinednetworks",
                                 validate_cudn_hook, name="cudn-validation",
                                 operations=("CREATE", "UPDATE"))
