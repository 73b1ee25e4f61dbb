"""The primary-UDN namespace label, and the rule that it is set at creation only.

A namespace opts into a primary user-defined network with the label
``k8s.ovn.org/primary-user-defined-network``, and only when it is created:
adding or removing it later would move running pods between networks.
Upstream enforces that with a ValidatingAdmissionPolicy (CEL, evaluated by the
API server); ``namespace_label_rule`` is the same rule as an ``ovnk.admission``
hook, refusing with that policy's name, binding and message, for a server
that cannot evaluate CEL.
"""

from __future__ import annotations

from ovnk_core.admission.contract import JSON, AdmissionRegistry, PolicyDenied

PRIMARY_NAMESPACE_LABEL = "k8s.ovn.org/primary-user-defined-network"
"""The label a namespace must carry, from its creation, to have a primary UDN."""

POLICY = "user-defined-networks-namespace-label"
BINDING = "user-defined-networks-namespace-label-binding"
MESSAGE = (f"The '{PRIMARY_NAMESPACE_LABEL}' label cannot be added/removed after the "
           "namespace was created")


def _labelled(namespace: JSON) -> bool:
    return PRIMARY_NAMESPACE_LABEL in ((namespace.get("metadata") or {}).get("labels") or {})


def namespace_label_rule(operation: str, new: JSON | None, old: JSON | None) -> None:
    """Refuse a namespace update that adds or removes the label (its value may change).

    :raises PolicyDenied: upstream's policy, binding and message.
    """
    if operation != "UPDATE" or new is None or old is None:
        return
    if _labelled(old) != _labelled(new):
        raise PolicyDenied(POLICY, MESSAGE, binding=BINDING)


def register(registry: AdmissionRegistry) -> None:
    """The ``ovnk.admission`` entry point: the rule on namespace updates."""
    registry.register_validating("", "namespaces", namespace_label_rule, name=POLICY,
                                 operations=("UPDATE",))
