"""What the ovnk components of a local cluster run with, and where each value comes from.

``ovnk local up`` takes the components' own options (the core's option table,
``ovnk_core.config.options``, added to its parser by ``add_config_arguments``; nothing is
declared twice) and ``--config FILE`` (else ``$OVNK_CONFIG``), and passes them on to the
cluster manager, the zone controller and every node agent:

* ``DIR/ovnk.toml`` (every component's ``--config``) holds ``LOCAL_SETTINGS`` (what a
  local cluster of UDNs needs), overridden by the user's file, and the values ``ovnk
  local`` owns (``OWNED``: the addresses of its own OVN databases and API server);
* the flags given to ``up`` go on each component's command line as ``--flag=value``
  (``ovnk_core.config.as_flags``), so they win over the file exactly as they would on
  the command line of a deployed ovnkube;
* both are kept in ``cluster.json`` (``component_flags``, ``config_source``), so ``ovnk
  local restart`` and the supervisor start the components the same way and ``ovnk local
  status`` shows them.

``up`` checks the result the way the components will load it (flags, then ``OVNK_*``
environment, then the file, then ovnk local's settings) before it starts anything: an
invalid or inconsistent value is the components' own ``ConfigError`` and exit code 2.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovnk_core.config import (
    Config,
    as_flags,
    config_file_text,
    given_options,
    load_config,
    read_config_file,
)
from ovnk_core.config.loader import CONFIG_FILE_ENV
from ovnk_core.config.options import OPTIONS_BY_FIELD
from ovnk_core.errors import ConfigError

LOCAL_SETTINGS: dict[str, Any] = {
    "enable_multi_network": True,
    "enable_network_segmentation": True,
    # user-defined networks need per-network masquerade addresses: upstream's /29 is too small
    "v4_masquerade_subnet": "169.254.0.0/17",
}
"""What a local cluster's components run with unless the user's file or flags say otherwise."""

IP_FAMILIES = ("ipv4", "ipv6", "dual")
"""``ovnk local up --ip-family``: kind's ``networking.ipFamily`` values."""

FAMILY_SETTINGS: dict[str, dict[str, Any]] = {
    "ipv4": {},
    # kind's and upstream's kind.sh IPv6 defaults; UDNs need a large masquerade subnet
    "ipv6": {"cluster_subnets": "fd00:10:244::/48/64", "service_cidrs": "fd00:10:96::/112",
             "v6_masquerade_subnet": "fd69::/112"},
    "dual": {"cluster_subnets": "10.244.0.0/16/24,fd00:10:244::/48/64",
             "service_cidrs": "10.96.0.0/16,fd00:10:96::/112",
             "v6_masquerade_subnet": "fd69::/112"},
}
"""ovnk local's settings per IP family of the cluster, over ``LOCAL_SETTINGS``."""

FAMILY_VERSIONS = {"ipv4": frozenset({4}), "ipv6": frozenset({6}), "dual": frozenset({4, 6})}

OWNED = ("nb_address", "sb_address", "kubeconfig", "node_name", "metrics_bind_address")
"""Options ``ovnk local`` sets itself, per cluster or per process (its own OVN databases,
each process's kubeconfig and node, no shared metrics port): ``up`` has no flags for them and
refuses a config file that sets them."""

SOURCE = "ovnk-local"
"""How ``LOCAL_SETTINGS`` and the owned values are reported as a source (``ovnk config``'s
word for where a value came from: cli, env, file, default)."""


def _flag(name: str) -> str:
    return "--" + OPTIONS_BY_FIELD[name].flag


@dataclass(frozen=True)
class ComponentSettings:
    """The options given to ``ovnk local up`` for the ovnk components."""

    given: Mapping[str, Any] = field(default_factory=dict)  # flags, raw, by Config field
    file_values: Mapping[str, Any] = field(default_factory=dict)  # the user's file, raw
    source: str = ""  # the user's file (absolute), "" without one
    ip_family: str = "ipv4"  # IP_FAMILIES: the cluster's, and ovnk local's settings for it

    @classmethod
    def from_args(cls, args: argparse.Namespace,
                  env: Mapping[str, str] | None = None) -> ComponentSettings:
        """The component options of ``ovnk local up``'s arguments (``--config`` FILE, else
        ``$OVNK_CONFIG``; ``--ip-family``).

        :raises ConfigError: the file cannot be read, or sets what ovnk local owns.
        """
        environ = os.environ if env is None else env
        path = getattr(args, "config", None) or environ.get(CONFIG_FILE_ENV) or ""
        file_values = read_config_file(path) if path else {}
        owned = [_flag(name)[2:] for name in OWNED if name in file_values]
        if owned:
            raise ConfigError(
                f"config file {path}: {', '.join(owned)} cannot be set for a local cluster: "
                "ovnk local sets them itself (its own OVN databases, each process's "
                "kubeconfig and node)")
        return cls(given_options(args), file_values, str(Path(path).resolve()) if path else "",
                   getattr(args, "ip_family", None) or "ipv4")

    @property
    def local_settings(self) -> dict[str, Any]:
        """ovnk local's settings for this cluster's IP family (``LOCAL_SETTINGS`` and
        ``FAMILY_SETTINGS``)."""
        return {**LOCAL_SETTINGS, **FAMILY_SETTINGS[self.ip_family]}

    @property
    def flags(self) -> list[str]:
        """The flags every ovnk component gets on its command line."""
        return as_flags(self.given)

    def file_text(self, owned: Mapping[str, Any]) -> str:
        """``DIR/ovnk.toml``: ovnk local's settings, the user's file over them, and the
        values ovnk local owns (``owned``)."""
        header = ("written by ovnk local up: the configuration of the local cluster's ovnk "
                  "components\n(ovnk local's settings"
                  + (f", then {self.source}" if self.source else "")
                  + "; flags given to 'ovnk local up' are on their command lines: "
                    "'ovnk local status')")
        return config_file_text({**self.local_settings, **self.file_values, **owned}, header)

    def check(self, owned: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Config:
        """The configuration the components will load (flags > ``OVNK_*`` environment > the
        user's file > ovnk local's settings).

        :raises ConfigError: naming every invalid or inconsistent value and its source, or
            cluster subnets whose IP families are not ``ip_family``'s.
        """
        environ = {key: value for key, value in (os.environ if env is None else env).items()
                   if key != CONFIG_FILE_ENV}  # the components get --config DIR/ovnk.toml
        config = load_config(dict(self.given), environ, self.source or None,
                             defaults={**self.local_settings, **owned}, defaults_source=SOURCE)
        if config.ip_families != FAMILY_VERSIONS[self.ip_family]:
            subnets = ",".join(str(subnet) for subnet in config.cluster_subnets)
            raise ConfigError(
                f"--ip-family {self.ip_family} needs cluster subnets of "
                + {"ipv4": "IPv4 only", "ipv6": "IPv6 only", "dual": "both IP families"}[
                    self.ip_family]
                + f", and --cluster-subnets is {subnets}; leave it to ovnk local or give "
                "subnets (and --service-cluster-ip-range) of those families")
        return config


__all__ = ["FAMILY_SETTINGS", "IP_FAMILIES", "LOCAL_SETTINGS", "OWNED", "SOURCE",
           "ComponentSettings"]
