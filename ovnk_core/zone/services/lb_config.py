"""From a Service and its endpoints to the load balancers OVN needs (pure).

Upstream's rules (``lb_config.go``), per service port:

* the ClusterIPs, and the externalIPs and LoadBalancer ingress IPs when the
  external traffic policy is ``Cluster``, go into one *cluster-wide* load
  balancer per protocol (``..._cluster``), in the network's load balancer
  group, with every eligible endpoint;
* that cluster configuration is made per node instead when
  ``internalTrafficPolicy: Local`` (the switch keeps only the node's
  endpoints) or when an endpoint is host-networked (the gateway router must
  reach its own node's endpoint through the host masquerade IP);
* a NodePort is per node, on the node's IPs;
* with ``externalTrafficPolicy: Local`` the externalIPs and LoadBalancer IPs
  are per node too, and the gateway router sends NodePort and external
  traffic only to the node's endpoints, without SNAT
  (``..._node_local_router_<node>``, ``skip_snat``), so the client IP is kept.

Per node the rules for the gateway router and for the switch are compared:
equal, they make one ``node_router+switch_<node>`` load balancer; else one
``node_router_<node>`` and one ``node_switch_<node>``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ovnk_core.config.values import IPNetwork
from ovnk_core.zone.services import names
from ovnk_core.zone.services.endpoints import Endpoint, eligible, port_endpoints

PROTOCOLS = ("TCP", "UDP", "SCTP")
DEFAULT_AFFINITY_TIMEOUT = 10800
MAX_AFFINITY_TIMEOUT = 86400
TYPES_WITH_NODE_PORTS = ("NodePort", "LoadBalancer")


@dataclass(frozen=True)
class ServicePort:
    name: str
    protocol: str
    port: int
    node_port: int = 0


@dataclass(frozen=True)
class ServiceSpec:
    """What of a Service the load balancers depend on, checked.

    :ivar problems: what was wrong in the Service and left out (for an event).
    """

    namespace: str
    name: str
    cluster_ips: tuple[str, ...] = ()
    external_ips: tuple[str, ...] = ()  # spec.externalIPs and status LoadBalancer IPs
    ports: tuple[ServicePort, ...] = ()
    external_local: bool = False
    internal_local: bool = False
    publish_not_ready: bool = False
    affinity_timeout: int | None = None
    problems: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _ips(values: Any, what: str, problems: list[str]) -> list[str]:
    found: list[str] = []
    for value in values if isinstance(values, list) else ():
        if value in ("", "None", None):
            continue
        try:
            ip = str(ipaddress.ip_address(str(value)))
        except ValueError:
            problems.append(f"{what} {value!r} is not an IP address")
            continue
        if ip not in found:
            found.append(ip)
    return found


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_service(service: Mapping[str, Any]) -> ServiceSpec | None:
    """The service's load-balancing spec; ``None`` for a service OVN does not balance
    (ExternalName, headless)."""
    meta = service.get("metadata") or {}
    spec = service.get("spec") or {}
    if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
        return None
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName":
        return None
    problems: list[str] = []
    cluster_ips = _ips(spec.get("clusterIPs") or [spec.get("clusterIP")], "clusterIP",
                       problems)
    if not cluster_ips:
        return None  # headless (or no ClusterIP yet): no load balancer
    status = service.get("status") or {}
    ingress = ((status.get("loadBalancer") or {}).get("ingress") or []) \
        if isinstance(status, Mapping) else []
    lb_ips = [entry.get("ip") for entry in ingress if isinstance(entry, Mapping)] \
        if isinstance(ingress, list) else []
    external = _ips(spec.get("externalIPs") or [], "externalIP", problems)
    external += [ip for ip in _ips(lb_ips, "LoadBalancer ingress IP", problems)
                 if ip not in external]
    ports: list[ServicePort] = []
    raw_ports = spec.get("ports")
    for raw in raw_ports if isinstance(raw_ports, list) else ():
        if not isinstance(raw, Mapping):
            continue
        protocol = str(raw.get("protocol") or "TCP")
        port = _int(raw.get("port"))
        if protocol not in PROTOCOLS:
            problems.append(f"port {raw.get('name') or port}: protocol {protocol!r} is not "
                            f"one of {', '.join(PROTOCOLS)}")
            continue
        if port is None or not 0 < port <= 65535:
            problems.append(f"port {raw.get('name') or ''}: {raw.get('port')!r} is not a "
                            "port number")
            continue
        node_port = _int(raw.get("nodePort")) or 0
        if kind not in TYPES_WITH_NODE_PORTS or not 0 < node_port <= 65535:
            node_port = 0
        ports.append(ServicePort(str(raw.get("name") or ""), protocol, port, node_port))
    affinity = None
    if spec.get("sessionAffinity") == "ClientIP":
        config = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {})
        timeout = _int(config.get("timeoutSeconds")) if isinstance(config, Mapping) else None
        affinity = timeout if timeout is not None and 0 < timeout <= MAX_AFFINITY_TIMEOUT \
            else DEFAULT_AFFINITY_TIMEOUT
    return ServiceSpec(namespace, name, tuple(cluster_ips), tuple(external), tuple(ports),
                       external_local=spec.get("externalTrafficPolicy") == "Local",
                       internal_local=spec.get("internalTrafficPolicy") == "Local",
                       publish_not_ready=spec.get("publishNotReadyAddresses") is True,
                       affinity_timeout=affinity, problems=tuple(problems))


@dataclass(frozen=True)
class LbConfig:
    """One service port's VIPs and endpoints, before it is split into load balancers.

    ``vips`` empty with ``node_port`` set: the VIPs are each node's own IPs.
    """

    protocol: str
    port: int
    vips: tuple[str, ...]
    endpoints: tuple[Endpoint, ...]
    external_local: bool = False
    internal_local: bool = False
    node_port: bool = False


@dataclass(frozen=True)
class ServiceConfigs:
    cluster: tuple[LbConfig, ...] = ()
    per_node: tuple[LbConfig, ...] = ()


def _is_host_endpoint(endpoint: Endpoint, subnets: Sequence[IPNetwork]) -> bool:
    ip = ipaddress.ip_address(endpoint.ip)
    return not any(ip in subnet for subnet in subnets if subnet.version == ip.version)


def build_configs(spec: ServiceSpec, slices: Sequence[Mapping[str, Any]],
                  subnets: Sequence[IPNetwork]) -> ServiceConfigs:
    """The cluster-wide and per-node configurations of a service on a network whose pod
    subnets are ``subnets`` (an endpoint outside them is host-networked)."""
    cluster: list[LbConfig] = []
    per_node: list[LbConfig] = []
    for port in spec.ports:
        endpoints = port_endpoints(slices, port.name, port.protocol)
        if port.node_port:
            per_node.append(LbConfig(port.protocol, port.node_port, (), endpoints,
                                     external_local=spec.external_local, node_port=True))
        vips = spec.cluster_ips
        if spec.external_local and spec.external_ips:
            per_node.append(LbConfig(port.protocol, port.port, spec.external_ips, endpoints,
                                     external_local=True))
        else:
            vips += spec.external_ips
        config = LbConfig(port.protocol, port.port, vips, endpoints,
                          internal_local=spec.internal_local)
        host_endpoints = any(_is_host_endpoint(e, subnets) for e in endpoints)
        (per_node if spec.internal_local or host_endpoints else cluster).append(config)
    return ServiceConfigs(tuple(cluster), tuple(per_node))


@dataclass(frozen=True)
class LoadBalancer:
    """One ``Load_Balancer`` row: its name, protocol, VIPs and where it goes.

    :ivar node: empty for the cluster-wide load balancer (in the cluster group).
    """

    name: str
    protocol: str  # tcp, udp, sctp
    vips: Mapping[str, str]
    options: Mapping[str, str]
    node: str = ""
    on_router: bool = False
    on_switch: bool = False
    selection_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeAddresses:
    """What the per-node load balancers of one node need to know of it."""

    name: str
    ips: tuple[str, ...]  # the node's IPs (NodePort VIPs)
    host_masquerade_ips: tuple[str, ...] = ()  # what the router reaches the host at


def vip_key(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _targets(endpoints: Iterable[Endpoint], version: int,
             replace: Mapping[str, str] | None = None) -> str:
    replace = replace or {}
    return ",".join(sorted({vip_key(replace.get(e.ip, e.ip), e.port)
                            for e in endpoints if e.version == version}))


@dataclass
class _Rules:
    by_protocol: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, protocol: str, vip: str, port: int, targets: str) -> None:
        self.by_protocol.setdefault(protocol, {})[vip_key(vip, port)] = targets


def base_options(hairpin_snat_ips: Sequence[str], affinity_timeout: int | None
                 ) -> dict[str, str]:
    """Upstream's options of every service load balancer.

    ClientIP affinity is ``affinity_timeout``, except at the longest timeout Kubernetes
    allows, which upstream writes without a timeout, as ``selection_fields`` instead."""
    options = {"event": "false", "reject": "true", "skip_snat": "false",
               "neighbor_responder": "none"}
    if hairpin_snat_ips:
        options["hairpin_snat_ip"] = " ".join(hairpin_snat_ips)
    if affinity_timeout is not None and affinity_timeout != MAX_AFFINITY_TIMEOUT:
        options["affinity_timeout"] = str(affinity_timeout)
    return options


def selection_fields(affinity_timeout: int | None) -> tuple[str, ...]:
    """The load balancer's ``selection_fields``: with ClientIP affinity at the longest
    timeout (86400 s) upstream hashes every connection of a client to one backend by
    source and destination address, with no timeout; otherwise OVN's default."""
    return ("ip_src", "ip_dst") if affinity_timeout == MAX_AFFINITY_TIMEOUT else ()


def cluster_load_balancers(spec: ServiceSpec, configs: Sequence[LbConfig], network: str,
                           options: Mapping[str, str]) -> list[LoadBalancer]:
    rules = _Rules()
    for config in configs:
        chosen = eligible(config.endpoints, spec.publish_not_ready)
        for vip in config.vips:
            version = 6 if ":" in vip else 4
            rules.add(config.protocol, vip, config.port, _targets(chosen, version))
    return [LoadBalancer(names.lb_name(network, spec.namespace, spec.name, protocol,
                                       names.SCOPE_CLUSTER),
                         protocol.lower(), vips, options,
                         selection_fields=selection_fields(spec.affinity_timeout))
            for protocol, vips in sorted(rules.by_protocol.items())]


def node_load_balancers(spec: ServiceSpec, configs: Sequence[LbConfig], network: str,
                        node: NodeAddresses, options: Mapping[str, str],
                        shared_switch: bool = False) -> list[LoadBalancer]:
    """The per-node load balancers of one node.

    ``shared_switch``: the node's pods are on a switch other nodes' pods are on too (and
    so their per-node load balancers): its switch rules cannot differ per node, so
    ``internalTrafficPolicy: Local`` gives way to every endpoint there.
    """
    router, switch, local_router = _Rules(), _Rules(), _Rules()
    # the router reaches a host-networked endpoint on its own node through the host
    # masquerade IP (the node IP is the router's own address)
    replace = {ip: masq for ip in node.ips for masq in node.host_masquerade_ips
               if (":" in ip) == (":" in masq)}
    for config in configs:
        cluster = eligible(config.endpoints, spec.publish_not_ready)
        local = eligible((e for e in config.endpoints if e.node == node.name),
                         spec.publish_not_ready)
        router_eps = local if config.external_local else cluster
        switch_eps = local if config.internal_local and not shared_switch else cluster
        vips = node.ips if config.node_port else config.vips
        for vip in vips:
            version = 6 if ":" in vip else 4
            router_targets = _targets(router_eps, version, replace)
            if config.external_local and router_targets:
                local_router.add(config.protocol, vip, config.port, router_targets)
            else:
                router.add(config.protocol, vip, config.port, router_targets)
            switch.add(config.protocol, vip, config.port, _targets(switch_eps, version))
    balancers: list[LoadBalancer] = []
    for protocol in sorted(set(router.by_protocol) | set(switch.by_protocol)
                           | set(local_router.by_protocol)):
        def lb(scope: str, vips: Mapping[str, str], opts: Mapping[str, str],
               on_router: bool, on_switch: bool, protocol: str = protocol) -> LoadBalancer:
            return LoadBalancer(names.lb_name(network, spec.namespace, spec.name, protocol,
                                              scope + node.name),
                                protocol.lower(), vips, opts, node.name, on_router, on_switch,
                                selection_fields(spec.affinity_timeout))

        router_vips = router.by_protocol.get(protocol, {})
        switch_vips = switch.by_protocol.get(protocol, {})
        if router_vips and router_vips == switch_vips:
            balancers.append(lb(names.SCOPE_ROUTER_AND_SWITCH, router_vips, options, True, True))
        else:
            if router_vips:
                balancers.append(lb(names.SCOPE_ROUTER, router_vips, options, True, False))
            if switch_vips:
                balancers.append(lb(names.SCOPE_SWITCH, switch_vips, options, False, True))
        local_vips = local_router.by_protocol.get(protocol, {})
        if local_vips:
            balancers.append(lb(names.SCOPE_LOCAL_ROUTER, local_vips,
                                {**options, "skip_snat": "true"}, True, False))
    return balancers
