"""The OVN logical switch port name of a pod's attachment to a network.

Shared by the topology plugins (which create the port) and the node side (which
binds the pod's interface to it through ``external_ids:iface-id``): both must
agree, and upstream's rule does not depend on the topology.
"""

from __future__ import annotations

DEFAULT_NAD_KEY = "default"


def pod_port_name(nad_key: str, namespace: str, pod: str) -> str:
    """``<ns>_<pod>`` on the default network; on a user-defined network the NAD key with
    ``-`` and ``/`` turned into ``.``, then ``_`` and that (upstream's GetUDNPortName)."""
    base = f"{namespace}_{pod}"
    if nad_key == DEFAULT_NAD_KEY:
        return base
    return nad_key.replace("-", ".").replace("/", ".") + "_" + base
