"""Who owns each NetworkPolicy row, and the ids and names upstream gives it.

Every row is written by the network's controller (``default-network-controller``,
``<network>-network-controller``) with upstream's ``k8s.ovn.org/owner-type``, name and
extra ids, so its ``k8s.ovn.org/id`` and its hashed OVN name (``a`` + FNV-1a-64 of the id)
are upstream's; ovnk's owner key (``k8s.ovn.org/owner``) adds the unit converged as one:

=========================  =====================================================
owner scope                rows
=========================  =====================================================
``network``                ``clusterPortGroup``, ``clusterRtrPortGroup``, the two
                           ``NetpolDefault`` allow-hairpinning ACLs
``node:<switch>``          the ``NetpolNode`` ACL(s) on a node's switch
``namespace:<ns>``         the ``ingressDefaultDeny``/``egressDefaultDeny`` groups
                           (``NetpolNamespace``) and their ACLs
``policy:<ns>/<name>``     the policy's port group and ACLs (``NetworkPolicy``)
``addrset:<selector>``     the peer address sets of one selector (``PodSelector``)
=========================  =====================================================
"""

from __future__ import annotations

from ovnk_core.contexts import feature_owner
from ovnk_core.ovn.declarative import Ref
from ovnk_core.ovn.hashed_names import hash_for_ovn
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.zone.owners import controller_name

FEATURE = "networkpolicy"
MULTI_FEATURE = "multinetworkpolicy"  # MultiNetworkPolicy's rows (secondary networks)

# owner types (upstream's libovsdbops ownerType values)
NETWORK_POLICY = "NetworkPolicy"
NETPOL_NAMESPACE = "NetpolNamespace"
NETPOL_DEFAULT = "NetpolDefault"
NETPOL_NODE = "NetpolNode"
POD_SELECTOR = "PodSelector"
CLUSTER = "Cluster"

# extra id keys, in upstream's order within each type
DIRECTION_KEY = "direction"
GRESS_INDEX_KEY = "gress-index"
PROTOCOL_KEY = "port-policy-protocol"
IP_BLOCK_INDEX_KEY = "ip-block-index"
TYPE_KEY = "type"
IP_KEY = "ip"
IP_FAMILY_KEY = "ip-family"

CLUSTER_PORT_GROUP = "clusterPortGroup"
CLUSTER_RTR_PORT_GROUP = "clusterRtrPortGroup"
ALLOW_HAIRPINNING = "allow-hairpinning"
# the ``type`` of a default-deny group's ACLs
DEFAULT_DENY, ARP_ALLOW = "defaultDeny", "arpAllow"
# ``ip-block-index`` of a rule's selector (or allow-all) ACL and of its combined ipBlock ACL
EMPTY_INDEX, IP_BLOCK_COMBINED_INDEX = -1, -2
# ``port-policy-protocol`` of an ACL without ports, and the suffix of a named-port ACL's
UNSPECIFIED_PROTOCOL = "None"
NAMED_PORT_SUFFIX = "-namedPort"
FAMILY_IDS = {4: "v4", 6: "v6"}

NETWORK_SCOPE = "network"


def owner(network: str, scope: str, feature: str = FEATURE) -> Owner:
    """The owner of ``scope``'s rows on ``network``, for NetworkPolicy or (``feature``)
    MultiNetworkPolicy: the two never converge each other's rows."""
    return feature_owner(feature, scope, controller=controller_name(network))


def network_owner(network: str, feature: str = FEATURE) -> Owner:
    return owner(network, NETWORK_SCOPE, feature)


def node_owner(network: str, switch: str, feature: str = FEATURE) -> Owner:
    return owner(network, f"node:{switch}", feature)


def namespace_owner(network: str, namespace: str, feature: str = FEATURE) -> Owner:
    return owner(network, f"namespace:{namespace}", feature)


def policy_owner(network: str, namespace: str, name: str, feature: str = FEATURE) -> Owner:
    return owner(network, f"policy:{namespace}/{name}", feature)


def address_set_owner(network: str, selector_key: str, feature: str = FEATURE) -> Owner:
    return owner(network, f"addrset:{selector_key}", feature)


def policy_object_name(namespace: str, name: str) -> str:
    """Upstream's ``BuildNamespaceNameKey``: ``<namespace>:<name>``."""
    return f"{namespace}:{name}"


def pg_name(ids: ObjectIDs) -> str:
    return hash_for_ovn(ids.primary_id)


def pg_ref(ids: ObjectIDs) -> Ref:
    return Ref.to("Port_Group", ids)


def cluster_pg_ids(network: str, base: str, feature: str = FEATURE) -> ObjectIDs:
    return network_owner(network, feature).object_ids(CLUSTER, base)


def hairpin_acl_ids(network: str, direction: str, feature: str = FEATURE) -> ObjectIDs:
    return network_owner(network, feature).object_ids(
        NETPOL_DEFAULT, ALLOW_HAIRPINNING, extra=((DIRECTION_KEY, direction),))


def node_acl_ids(network: str, switch: str, ip: str, feature: str = FEATURE) -> ObjectIDs:
    return node_owner(network, switch, feature).object_ids(NETPOL_NODE, switch,
                                                           extra=((IP_KEY, ip),))


def deny_pg_ids(network: str, namespace: str, direction: str,
                feature: str = FEATURE) -> ObjectIDs:
    return namespace_owner(network, namespace, feature).object_ids(
        NETPOL_NAMESPACE, namespace, extra=((DIRECTION_KEY, direction),))


def deny_acl_ids(network: str, namespace: str, direction: str, acl_type: str,
                 feature: str = FEATURE) -> ObjectIDs:
    return namespace_owner(network, namespace, feature).object_ids(
        NETPOL_NAMESPACE, namespace, extra=((DIRECTION_KEY, direction), (TYPE_KEY, acl_type)))


def policy_pg_ids(network: str, namespace: str, name: str, feature: str = FEATURE) -> ObjectIDs:
    return policy_owner(network, namespace, name, feature).object_ids(
        NETWORK_POLICY, policy_object_name(namespace, name))


def policy_acl_ids(network: str, namespace: str, name: str, direction: str, gress_index: int,
                   protocol: str, ip_block_index: int, feature: str = FEATURE) -> ObjectIDs:
    return policy_owner(network, namespace, name, feature).object_ids(
        NETWORK_POLICY, policy_object_name(namespace, name),
        extra=((DIRECTION_KEY, direction), (GRESS_INDEX_KEY, str(gress_index)),
               (PROTOCOL_KEY, protocol), (IP_BLOCK_INDEX_KEY, str(ip_block_index))))


def address_set_ids(network: str, selector_key: str, version: int,
                    feature: str = FEATURE) -> ObjectIDs:
    return address_set_owner(network, selector_key, feature).object_ids(
        POD_SELECTOR, selector_key, extra=((IP_FAMILY_KEY, FAMILY_IDS[version]),))


def address_set_name(network: str, selector_key: str, version: int,
                     feature: str = FEATURE) -> str:
    return hash_for_ovn(address_set_ids(network, selector_key, version, feature).primary_id)
