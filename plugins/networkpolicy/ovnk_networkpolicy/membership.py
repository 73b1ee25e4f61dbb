"""Which port groups a pod's port joins: its part of ``ovnk_zone_pod_port``.

A pod's port on its primary network joins the group of every policy of its namespace
that selects it, and the namespace's ingress (egress) default-deny group when one of them
is of type Ingress (Egress).  It is computed from the policies in the informer cache (the
pod's namespace only: an index lookup), never from what the controller has done, so that
a zone restart gives every port the links it already has and writes nothing.  Only groups
already in Northbound are joined: a new policy's group is joined once its controller wrote
it and asked the zone to reconcile the namespace's pods (``ZoneContext.reconcile_pods``).

On a network whose pod switches hold no management port (ovnk's primary Layer2, every
secondary network), every port also joins the network's ``clusterPortGroup`` (once it
exists: always on a primary network, on a secondary one once a MultiNetworkPolicy is on
it), whose allow-hairpinning ACLs (``allow-related``) then sit on the switches holding the
network's pods.  Upstream puts the nodes' management ports there, which has that effect
because each of its primary networks' pod switches holds one (ovnk's default network and
primary Layer3 switches are stateful through their ``NetpolNode`` ACLs); a switch without
any stateful ACL tracks no connection: the reply to a connection a pod in a default-deny
group opened would be dropped as a new packet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ovnk_core.errors import NotReady
from ovnk_core.kube.client import JSON
from ovnk_core.kube.informer import Informer
from ovnk_core.networks.netinfo import ROLE_PRIMARY, NetInfo
from ovnk_core.ovn.declarative import Link
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_networkpolicy import ids
from ovnk_networkpolicy.policy_kinds import PolicyKind, usable_scopes
from ovnk_networkpolicy.policy_spec import Policy, PolicyError, parse_policy
from ovnk_networkpolicy.rows import pod_groups

SYNC_TIMEOUT = 30.0


class PolicyCache:
    """Parsed policies by namespace and name, parsed again only when their
    resourceVersion changes; a namespace's deleted policies are forgotten when it is read.
    ``kind`` places each (``policy_kinds``): ``on_network`` keeps those of one network."""

    def __init__(self, policies: Informer, kind: PolicyKind) -> None:
        self.policies = policies
        self.kind = kind
        self._lock = threading.Lock()
        self._parsed: dict[str, dict[str, tuple[str, Policy | None]]] = {}

    def on_network(self, namespace: str, network: str) -> list[Policy]:
        """The namespace's renderable policies placed on ``network``."""
        policies = {policy.name: policy for policy in self.in_namespace(namespace)}
        found = []
        for obj in self.policies.peek_by_index("namespace", namespace):
            policy = policies.get(str(obj["metadata"]["name"]))
            if policy is not None and any(
                    scope.network == network
                    for scope in usable_scopes(self.kind, policy, self.kind.place(obj))):
                found.append(policy)
        return found

    def in_namespace(self, namespace: str) -> list[Policy]:
        objects = self.policies.peek_by_index("namespace", namespace)
        with self._lock:
            cached = dict(self._parsed.get(namespace, {}))
        current: dict[str, tuple[str, Policy | None]] = {}
        for obj in objects:
            meta = obj["metadata"]
            name, version = str(meta["name"]), str(meta.get("resourceVersion", ""))
            known = cached.get(name)
            current[name] = known if known is not None and known[0] == version and version \
                else (version, _parse(obj))
        with self._lock:
            if current:
                self._parsed[namespace] = current
            else:
                self._parsed.pop(namespace, None)
        return [policy for _version, policy in current.values() if policy is not None]


def _parse(obj: JSON) -> Policy | None:
    try:
        return parse_policy(obj)
    except PolicyError:
        return None


def has_management_ports(netinfo: NetInfo) -> bool:
    """Whether the network's pod switches hold the nodes' management ports (the default
    network and primary Layer3 UDNs in ovnk)."""
    return netinfo.is_default or (netinfo.role == ROLE_PRIMARY and netinfo.topology == "layer3")


def pod_port_links(cache: PolicyCache, row_exists: Callable[[str, str], bool],
                   pod: dict[str, Any], attachment: PodAttachment, netinfo: NetInfo
                   ) -> PodPortExtras | None:
    """The groups of the pod's port on a network of the cache's kind (its primary network
    for NetworkPolicy, a secondary one for MultiNetworkPolicy; ``None`` for others)."""
    if attachment.role != cache.kind.pod_role:
        return None
    if not cache.policies.has_synced() and \
            not cache.policies.wait_for_sync(timeout=SYNC_TIMEOUT):
        # the pod's rows stay as they are and it is retried (never a link dropped because
        # the policies are not known yet)
        raise NotReady("NetworkPolicies not listed yet")
    labels = dict((pod.get("metadata") or {}).get("labels") or {})
    policies = cache.in_namespace(attachment.namespace) if cache.kind.pod_role == ROLE_PRIMARY \
        else cache.on_network(attachment.namespace, netinfo.name)
    groups = pod_groups(netinfo.name, labels, attachment.namespace, policies,
                        cache.kind.feature)
    if not has_management_ports(netinfo):
        groups.append(ids.pg_ref(ids.cluster_pg_ids(netinfo.name, ids.CLUSTER_PORT_GROUP,
                                                    cache.kind.feature)))
    links = tuple(Link(group, "ports") for group in groups
                  if row_exists(group.table, group.primary_id))
    return PodPortExtras(links=links) if links else None
