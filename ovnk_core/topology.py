"""The contract a topology plugin implements.

A topology (``layer3``, ``layer2``, ``localnet``, or one shipped by a third
party) is a class registered in the ``ovnk.topologies`` entry-point group
under the same name that networks use in their netconf ``topology`` key::

    [project.entry-points."ovnk.topologies"]
    evpn = "ovnk_evpn.topology:EvpnTopology"

The core instantiates it once with the ``Config`` and registers the instance
with the plugin manager, so a topology may also implement any hook of
``ovnk_core.hookspecs``.  Later issues add rendering methods to this class;
each addition is an abstract method with its own docstring here.
"""

from __future__ import annotations

import abc
from typing import ClassVar

from ovnk_core.config import Config
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netinfo import NetInfo


class Topology(abc.ABC):
    """Base class of every topology plugin.

    :cvar name: the topology string networks use (lower case), equal to the entry-point name.
    :cvar supports_primary: whether the topology may carry a network with role ``primary``.
    """

    name: ClassVar[str]
    supports_primary: ClassVar[bool] = True

    def __init__(self, config: Config) -> None:
        self.config = config

    def default_mtu(self) -> int:
        """MTU of a network that does not set one (the cluster MTU unless overridden)."""
        return self.config.mtu

    @abc.abstractmethod
    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        """Turn a netconf of this topology into a ``NetInfo``.

        Called whenever a NAD naming this topology is added or changed, in any
        component.  Must be pure: no I/O, no state kept between calls.

        :param netconf: the common keys already parsed by the core, plus ``raw``
            (the whole document) for the topology's own keys.
        :returns: the network's ``NetInfo``.
        :raises NetworkConfigError: when the netconf is invalid for this topology; the
            message is shown on the network's status (and the NAD is ignored), other
            networks are unaffected.
        """
