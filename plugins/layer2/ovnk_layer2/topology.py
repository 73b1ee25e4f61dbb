"""The Layer2 topology: netconf rules now, NB rendering in its own issue.

A Layer2 network is one subnet shared by all nodes; a primary Layer2 network
needs subnets and also gets a transit subnet for its transit router.
"""

from __future__ import annotations

from ovnk_core import NetworkConfigError, Topology
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import (
    read_exclude_subnets,
    read_join_subnets,
    read_mtu,
    read_persistent_ips,
    read_plain_subnets,
)
from ovnk_core.networks.netinfo import NetInfo


class Layer2Topology(Topology):
    name = "layer2"

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        subnets = read_plain_subnets(netconf)
        if netconf.role == "primary" and not subnets:
            raise NetworkConfigError("the subnet attribute must be defined for layer2 primary "
                                     "user defined networks")
        allow_persistent = read_persistent_ips(netconf, self.config)
        if allow_persistent and not subnets:
            raise NetworkConfigError("allowPersistentIPs is set but the network has no subnets")
        transit = netconf.get_cidrs("transitSubnet") if netconf.role == "primary" else ()
        return NetInfo(
            name=netconf.name, topology=self.name, role=netconf.role,
            mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
            exclude_subnets=read_exclude_subnets(netconf, subnets),
            join_subnets=read_join_subnets(netconf, subnets), transit_subnets=transit,
            allow_persistent_ips=allow_persistent, nad_key=netconf.nad_key,
        )
