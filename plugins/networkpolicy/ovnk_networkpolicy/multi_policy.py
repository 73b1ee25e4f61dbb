"""MultiNetworkPolicy (``k8s.cni.cncf.io/v1beta1``): NetworkPolicy's spec, on the secondary
networks its ``k8s.v1.cni.cncf.io/policy-for`` annotation names.

As upstream's ``base_network_controller_multipolicy.go``: the annotation is a
comma-separated list of NADs (spaces ignored), ``name`` in the policy's namespace or
``namespace/name``; the policy applies to every secondary network one of them belongs to,
with the rows a NetworkPolicy has there (the network's controller, owner type
``NetworkPolicy``), and selects pods by their attachment to that network.  On a network
without IPAM (no subnets) only ``ipBlock`` peers can be rendered (upstream's error).  A
policy without the annotation is no network's.  Unlike upstream, which skips a name it
cannot resolve silently, a name that is no NAD (or a NAD of no network) is said in a
Warning event on the policy; the networks it does name are rendered.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovnk_core.annotations.pod_networks import (
    POD_NETWORKS_ANNOTATION,
    PodAnnotationError,
    parse,
)
from ovnk_core.contexts import ZoneContext
from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import NADS, Resource
from ovnk_core.networks.nad_config import nad_network_name
from ovnk_core.networks.netinfo import ROLE_SECONDARY
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY, pod_port_name
from ovnk_networkpolicy import ids
from ovnk_networkpolicy.peers import PodFacts
from ovnk_networkpolicy.pod_facts import FINISHED_PHASES, named_ports
from ovnk_networkpolicy.policy_kinds import Placement, annotation, check_ipam
from ovnk_networkpolicy.policy_spec import Policy
from ovnk_networkpolicy.rows import NetworkScope

MULTI_NETWORK_POLICIES = Resource("k8s.cni.cncf.io", "v1beta1", "multi-networkpolicies",
                                  "MultiNetworkPolicy", True)
POLICY_FOR = "k8s.v1.cni.cncf.io/policy-for"
NETWORK_INDEX = "network"


def policy_for(obj: JSON) -> list[str]:
    """The NAD keys (``namespace/name``) the annotation names, in its order."""
    raw = annotation(obj, POLICY_FOR)
    if not isinstance(raw, str):
        return []
    namespace = str((obj.get("metadata") or {}).get("namespace", ""))
    keys = []
    for name in raw.replace(" ", "").split(","):
        if not name:
            continue
        nad_namespace, _, nad_name = name.rpartition("/")
        keys.append(f"{nad_namespace or namespace}/{nad_name}")
    return keys


class MultiNetworkPolicyKind:
    """MultiNetworkPolicy on the zone's rendered secondary networks."""

    feature = ids.MULTI_FEATURE
    resource = MULTI_NETWORK_POLICIES
    network_rows = False
    pod_role = ROLE_SECONDARY

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self.nads = context.informers.get(NADS, indexers={NETWORK_INDEX: nad_network_name})

    def _network_of_nad(self, nad_key: str) -> str | None:
        nad = self.nads.peek(nad_key)
        names = nad_network_name(nad) if nad is not None else []
        return names[0] if names else None

    def place(self, obj: JSON) -> Placement:
        placement = Placement()
        seen: set[str] = set()
        for nad_key in policy_for(obj):
            network = self._network_of_nad(nad_key)
            if network is None:
                placement.problems.append(
                    f"{POLICY_FOR} names {nad_key}, which is no network's "
                    "NetworkAttachmentDefinition")
                continue
            if network in seen:
                continue
            seen.add(network)
            state = self.context.rendered_network(network)
            if state is None:
                placement.waiting = True
            elif state.netinfo.role == ROLE_SECONDARY:
                scope = self.scope(network)
                if scope is not None:
                    placement.scopes.append(scope)
        return placement

    def check(self, policy: Policy, scope: NetworkScope) -> None:
        check_ipam(policy, scope)

    def pod_facts(self, pod: JSON, network: str) -> PodFacts:
        """The pod's address and port on ``network`` (none: not attached to it)."""
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        plain = PodFacts(namespace, name, dict(meta.get("labels") or {}),
                         named_ports=named_ports(pod))
        if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
            return plain
        try:
            networks = parse((meta.get("annotations") or {}).get(POD_NETWORKS_ANNOTATION))
        except PodAnnotationError:
            return plain
        for nad_key, entry in sorted(networks.items()):
            if entry.role in (ROLE_SECONDARY, "") and nad_key != DEFAULT_NAD_KEY and \
                    self._network_of_nad(nad_key) == network:
                return PodFacts(namespace, name, plain.labels,
                                tuple(ip.split("/")[0] for ip in entry.ip_addresses),
                                pod_port_name(nad_key, namespace, name), plain.named_ports)
        return plain

    def namespace_on(self, namespace: str, network: str) -> bool:
        return True  # pods of any namespace may attach to a secondary network

    def scope(self, network: str) -> NetworkScope | None:
        state = self.context.rendered_network(network)
        if state is None or state.netinfo.role != ROLE_SECONDARY:
            return None
        versions = {int(s.cidr.version) for s in state.netinfo.subnets}
        families = tuple(sorted(versions or {int(v) for v in self.context.config.ip_families}))
        return NetworkScope(network, families, acl_tiers=self.context.nb_capabilities.acl_tier,
                            feature=self.feature, has_ipam=bool(versions))

    def gone(self, network: str) -> bool:
        return not self.nads.keys_by_index(NETWORK_INDEX, network)

    def networks(self) -> Iterable[NetworkScope]:
        return ()
