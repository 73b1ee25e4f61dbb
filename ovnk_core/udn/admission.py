"""The UDN/CUDN validation rules as admission hooks of an API server.

A real cluster evaluates the CRDs' CEL rules at ``kubectl apply``; an API
server that cannot (the local one of ``ovnk-local``) runs these hooks
instead: the same rules (``udn.validation``), rejecting with the message a
real server prints.  Registered through the ``ovnk.admission`` entry point
(``admission.contract``), so such a server loads them by itself.

Which topologies a UDN/CUDN may name is the cluster's: ``register`` loads the
topology plugins the configuration enables (``OVNK_*`` environment and
``$OVNK_CONFIG``, as every ovnk component reads them; ``--topologies``) and
validates each section with the plugin that owns it, so a network of a
topology no enabled plugin provides is rejected at apply time.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.contract import AdmissionRegistry
from ovnk_core.admission.contract import FieldError as ApiFieldError
from ovnk_core.admission.field_errors import FieldError
from ovnk_core.config import Config, load_config
from ovnk_core.udn.sections import UdnSections, installed_sections, sections_for
from ovnk_core.udn.validation import validate_cudn, validate_udn


def _to_api(errors: list[FieldError]) -> list[ApiFieldError]:
    return [error.to_api() for error in errors]


class UdnAdmission:
    """The UDN and CUDN validating hooks for one set of loaded sections."""

    def __init__(self, sections: UdnSections) -> None:
        self.sections = sections

    @classmethod
    def for_config(cls, config: Config) -> UdnAdmission:
        """The hooks of the topology plugins ``config`` enables.

        :raises PluginLoadError: as ``PluginHost.load``.
        :raises ConfigError: a plugin rejected the configuration.
        """
        return cls(sections_for(config))

    def validate_udn_hook(self, operation: str, new: dict[str, Any] | None,
                          old: dict[str, Any] | None) -> list[ApiFieldError] | None:
        if new is None or operation == "DELETE":
            return None
        errors = validate_udn(new, old if operation == "UPDATE" else None, self.sections)
        return _to_api(errors) or None

    def validate_cudn_hook(self, operation: str, new: dict[str, Any] | None,
                           old: dict[str, Any] | None) -> list[ApiFieldError] | None:
        if new is None or operation == "DELETE":
            return None
        errors = validate_cudn(new, old if operation == "UPDATE" else None, self.sections)
        return _to_api(errors) or None

    def register(self, registry: AdmissionRegistry) -> None:
        registry.register_validating("k8s.ovn.org", "userdefinednetworks",
                                     self.validate_udn_hook, name="udn-validation",
                                     operations=("CREATE", "UPDATE"))
        registry.register_validating("k8s.ovn.org", "clusteruserdefinednetworks",
                                     self.validate_cudn_hook, name="cudn-validation",
                                     operations=("CREATE", "UPDATE"))


def validate_udn_hook(operation: str, new: dict[str, Any] | None,
                      old: dict[str, Any] | None) -> list[ApiFieldError] | None:
    """The UDN hook with every installed topology's section."""
    return UdnAdmission(installed_sections()).validate_udn_hook(operation, new, old)


def validate_cudn_hook(operation: str, new: dict[str, Any] | None,
                       old: dict[str, Any] | None) -> list[ApiFieldError] | None:
    """The CUDN hook with every installed topology's section."""
    return UdnAdmission(installed_sections()).validate_cudn_hook(operation, new, old)


def register(registry: AdmissionRegistry) -> None:
    """The ``ovnk.admission`` entry point: the hooks of the topologies the configuration
    of this process's environment enables (module doc).

    :raises ConfigError: that configuration is invalid, or a plugin rejected it.
    :raises PluginLoadError: an enabled plugin is missing or broken.
    """
    UdnAdmission.for_config(load_config()).register(registry)
