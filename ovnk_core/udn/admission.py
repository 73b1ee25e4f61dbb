"""The UDN/CUDN validation rules as admission hooks of an API server.

A real cluster evaluates the CRDs' CEL rules at ``kubectl apply``; an API
server that cannot (the local one of ``ovnk-local``) runs these hooks
instead: the same rules (``udn.validation``), rejecting with the message a
real server prints.  Registered through the ``ovnk.admission`` entry point
(``admission.contract``), so such a server loads them by itself.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.contract import AdmissionRegistry
from ovnk_core.admission.contract import FieldError as ApiFieldError
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
