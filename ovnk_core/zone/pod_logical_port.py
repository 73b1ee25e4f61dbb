"""A pod's logical switch port, as every topology writes it.

Whatever the topology, a pod's attachment is one ``Logical_Switch_Port`` on one switch:
its MAC and IPs as addresses and port security (the MAC alone on a network without IPAM),
bound on the pod's node (``requested-chassis``) to the interface of this pod incarnation
(``iface-id-ver`` = the pod's UID), and upstream's pod external_ids.  The topology decides
the switch, the port's name and owner ids, and whether the port asks for a tunnel key;
``build_network_pod_port`` is the common case of a network's own switch with upstream's
pod ids (network and topology under the pod's owner).
"""

from __future__ import annotations

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs
from ovnk_core.render_state import PodAttachment
from ovnk_core.zone.owners import pod_owner

NAD_KEY = "k8s.ovn.org/nad"


def pod_port_address(pod: PodAttachment) -> str:
    """``"<mac> <ip> [<ip6>]"``; the MAC alone on a network without IPAM."""
    return " ".join([pod.mac, *(str(ip) for ip in pod.addresses)])


def build_pod_logical_port(ids: ObjectIDs, name: str, pod: PodAttachment, switch: Ref,
                           nad_key: str = "", tunnel_key: int | None = None,
                           port_type: str | None = None) -> DesiredRow:
    """The pod's port on ``switch``.

    :param nad_key: the NAD the attachment comes from (``k8s.ovn.org/nad``); empty on the
        default network, which upstream's ports do not mark.
    :param tunnel_key: the port's requested tunnel key (``requested-tnl-key``), for
        topologies whose ports keep theirs across zones.
    :param port_type: the port's ``type``, declared when given: ``remote`` for a pod of
        another zone on a switch the zones share, ``""`` (a VIF) for a local pod there (a
        pod whose node moved into the zone is one again); not declared otherwise.
    """
    address = pod_port_address(pod)
    options = {"requested-chassis": pod.node, "iface-id-ver": pod.uid}
    if tunnel_key is not None:
        options["requested-tnl-key"] = str(tunnel_key)
    extra = {"pod": "true", "namespace": pod.namespace}
    if nad_key:
        extra[NAD_KEY] = nad_key
    columns: dict[str, object] = {"name": name, "addresses": [address],
                                  "port_security": [address], "options": options}
    if port_type is not None:
        columns["type"] = port_type
    return DesiredRow("Logical_Switch_Port", ids, columns,
                      links=(Link(switch, "ports"),), extra_external_ids=extra)


def build_network_pod_port(netinfo: NetInfo, pod: PodAttachment, switch: Ref,
                           tunnel_key: int | None = None, port_type: str | None = None
                           ) -> DesiredRow:
    """The pod's port on a user-defined network's switch ``switch``: named after its NAD
    (``<nad prefix>_<ns>_<pod>``), owned by the pod, with upstream's network and topology
    ids."""
    owner = pod_owner(netinfo, pod.namespace, pod.name)
    ids = owner.object_ids("Pod", f"{pod.namespace}/{pod.name}", network=netinfo.name,
                           topology=netinfo.topology)
    return build_pod_logical_port(ids, pod_port_name(pod.nad_key, pod.namespace, pod.name),
                                  pod, switch, nad_key=pod.nad_key, tunnel_key=tunnel_key,
                                  port_type=port_type)
