"""The UDN/CUDN schemas' CEL validations, in Python, with upstream's messages.

A real cluster evaluates these rules in the API server; here the same rules
run as admission hooks of the local API server (``udn.admission``).  Each
check returns ``FieldError`` values (``admission.field_errors``): the field
path and upstream's message, printed the way kube-apiserver prints a failed
CEL rule or, for the schema keywords the rules also check, that keyword's
failure.

The rules here are the ones every topology shares (``topology``, the
"required when" rule of the sections, the CUDN's selector and transport
fields); each section is checked by the topology plugin that owns it
(``UdnSection.validate``, ``ovnk_core.udn_section``), among the loaded
``UdnSections``.  A ``topology`` no loaded section owns is an unsupported
value that says no enabled topology plugin provides it.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.contract import go_value
from ovnk_core.admission.field_errors import FieldError, required, unsupported, wrong_type
from ovnk_core.udn.evpn import evpn_errors
from ovnk_core.udn.sections import UdnSections, installed_sections
from ovnk_core.udn_section import EVPN, NO_OVERLAY, UdnSection

JSON = dict[str, Any]

__all__ = ["FieldError", "invalid_message", "validate_cudn", "validate_udn"]


def no_plugin(path: str, topology: str, supported: tuple[str, ...]) -> FieldError:
    """``<path>: Unsupported value: "X": supported values: "A", "B" (no enabled topology
    plugin provides "X")``: the enum error a cluster whose CRDs list only the loaded
    sections prints, and why the value is missing from them."""
    hint = f"no enabled topology plugin provides {go_value(topology)}"
    if supported:
        hint = (f"supported values: {', '.join(go_value(v) for v in supported)} "
                f"({hint})")
    return FieldError(path, hint, topology, kind="NotSupported")


def check_network(spec: JSON, old: JSON | None, path: str, allowed: UdnSections,
                  loaded: UdnSections) -> list[FieldError]:
    """``topology`` and the sections of a UDN spec or a CUDN's ``spec.network``.

    :param allowed: the sections this kind may use.
    :param loaded: every loaded section (a value outside ``allowed`` but in here is a plain
        unsupported value, one outside both says no enabled plugin provides it).
    """
    errors: list[FieldError] = []
    topology = spec.get("topology")
    if topology is None:
        return [required(f"{path}.topology")]
    if not isinstance(topology, str):
        return [wrong_type(f"{path}.topology", topology, "string")]
    chosen = allowed.get(topology)
    if chosen is None:
        if loaded.get(topology) is None:
            return [no_plugin(f"{path}.topology", topology, allowed.values())]
        return [unsupported(f"{path}.topology", topology, allowed.values())]
    if old is not None and old.get("topology") != topology:
        errors.append(FieldError(f"{path}.topology", "Topology is immutable", topology))
    for section in allowed:
        key = section.key
        present = key in spec and spec[key] is not None
        if present != (section is chosen):
            errors.append(FieldError(path, f"spec.{key} is required when topology is "
                                           f"{section.topology} and forbidden otherwise"))
        elif present:
            if not isinstance(spec[key], dict):
                errors.append(wrong_type(f"{path}.{key}", spec[key], "object"))
                continue
            old_config = (old or {}).get(key) if old is not None else None
            errors += section.validate(spec[key], old_config if isinstance(old_config, dict)
                                       else None, f"{path}.{key}")
    return errors


def _missing_object(path: str, value: Any) -> FieldError:
    """A required object that is absent, or is not an object."""
    return required(path) if value is None else wrong_type(path, value, "object")


def validate_udn(obj: JSON, old: JSON | None = None,
                 sections: UdnSections | None = None) -> list[FieldError]:
    """A UserDefinedNetwork (``old``: before an UPDATE) against the ``sections`` of the
    loaded topologies (default: every installed one's) a namespaced network may use."""
    sections = installed_sections() if sections is None else sections
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_missing_object("spec", spec)]
    old_spec = (old or {}).get("spec") if old is not None else None
    return check_network(spec, old_spec if isinstance(old_spec, dict) else None, "spec",
                         sections.namespaced(), sections)


def validate_cudn(obj: JSON, old: JSON | None = None,
                  sections: UdnSections | None = None) -> list[FieldError]:
    """A ClusterUserDefinedNetwork (``old``: before an UPDATE) against the ``sections`` of
    the loaded topologies (default: every installed one's)."""
    sections = installed_sections() if sections is None else sections
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_missing_object("spec", spec)]
    errors: list[FieldError] = []
    if not isinstance(spec.get("namespaceSelector"), dict):
        errors.append(_missing_object("spec.namespaceSelector", spec.get("namespaceSelector")))
    network = spec.get("network")
    if not isinstance(network, dict):
        return [*errors, _missing_object("spec.network", network)]
    old_network = ((old or {}).get("spec") or {}).get("network") if old is not None else None
    errors += check_network(network, old_network if isinstance(old_network, dict) else None,
                            "spec.network", sections, sections)
    errors += _transport_errors(network, "spec.network", sections)
    return errors


def transport_support_message(transport: str, sections: UdnSections) -> str:
    """Upstream's "transport 'X' is only supported for <topologies> primary networks",
    naming the loaded sections whose ``transports`` include it."""
    names = [section.topology for section in sections.by_value()
             if transport in section.transports]
    if not names:
        return f"transport '{transport}' is not supported by any enabled topology"
    return f"transport '{transport}' is only supported for {' or '.join(names)} primary networks"


def evpn_vrf_message(section: UdnSection, vrf: str, needed: bool) -> str:
    """Upstream's rule on one VRF of an EVPN network of ``section``'s topology."""
    state = "required" if needed else "forbidden"
    return (f"spec.evpn.{vrf} field is {state} for {section.topology} topology when transport "
            f"is '{EVPN}'")


def _transport_errors(network: JSON, path: str, sections: UdnSections) -> list[FieldError]:
    errors = []
    transport = network.get("transport")
    section = sections.get(network.get("topology"))
    config = network.get(section.key) if section is not None else None
    role = config.get("role") if isinstance(config, dict) else None

    def unsupported_here(name: str) -> bool:
        return transport == name and not (section is not None
                                          and section.supports_transport(name, role))

    if unsupported_here(NO_OVERLAY):
        errors.append(FieldError(path, transport_support_message(NO_OVERLAY, sections)))
    if transport == NO_OVERLAY and "noOverlay" not in network:
        errors.append(FieldError(path, "spec.noOverlay is required when type transport is "
                                       "'NoOverlay'"))
    if "noOverlay" in network and transport != NO_OVERLAY:
        errors.append(FieldError(path, "spec.noOverlay is forbidden when transport type is not "
                                       "'NoOverlay'"))
    if unsupported_here(EVPN):
        errors.append(FieldError(path, transport_support_message(EVPN, sections)))
    evpn = network.get("evpn")
    if transport == EVPN and evpn is None:
        errors.append(FieldError(path, "spec.evpn field is required when transport is 'EVPN'"))
    if evpn is not None and transport != EVPN:
        errors.append(FieldError(path, "spec.evpn field is forbidden when transport is not "
                                       "'EVPN'"))
    if isinstance(evpn, dict) and section is not None:
        errors += [FieldError(path, evpn_vrf_message(section, vrf, needed))
                   for vrf, needed in section.evpn_vrfs if (vrf in evpn) != needed]
    if isinstance(evpn, dict):
        errors += evpn_errors(evpn, f"{path}.evpn")
    return errors


def invalid_message(kind: str, group: str, name: str, errors: list[FieldError]) -> str:
    """The message a real API server returns for these errors."""
    joined = ", ".join(str(error) for error in errors)
    if len(errors) > 1:
        joined = f"[{joined}]"
    return f'{kind}.{group} "{name}" is invalid: {joined}'
