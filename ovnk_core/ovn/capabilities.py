"""What the Northbound ovnk talks to supports: the one place that reads it from its schema.

ovnk renders upstream's rows exactly where the OVN it talks to can hold them, and keeps to
what an older OVN (Debian 12's 23.03, NB schema 7.0.0) can do elsewhere.  Every such choice
reads an ``NbCapabilities``, made here from the schema the server sent (the writer's
``get_schema``), never from the version of the programs on this machine:

* ``acl_tier``: ``ACL.tier`` exists (OVN 23.06+).  Upstream puts the ACLs that keep networks
  apart in tier 0 and network policy in tier 2; without the column every ACL is evaluated as
  tier 0.
* ``nat_match``: ``NAT.match`` exists (OVN 23.09+).  Upstream's management-port SNAT of a
  primary UDN (``eth.dst == <mgmt MAC>``) needs it; without it the row is not rendered.
* ``router_peering``: a distributed router's port may peer a gateway router's directly
  (OVN's transit routers, 25.09).  No column says so, so it is read from the schema
  version: the first one this was verified on (``ROUTER_PEERING_SCHEMA``, OVN 26.03's),
  below it a primary network's transit router meets the gateway routers on a ``<P>join``
  switch, which every OVN forwards.  (Across chassis the peered port must be a distributed
  gateway port on the gateway router's chassis: the topology plugin that peers pins it.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# the NB schema of OVN 26.03.1, where the direct transit-router <-> gateway-router link is
# proven by real packets (the e2e tier); OVN 25.09 introduced it, unverified here
ROUTER_PEERING_SCHEMA = (7, 18, 0)


def parse_version(text: str) -> tuple[int, int, int]:
    """``"7.18.0"`` → ``(7, 18, 0)`` (missing parts are 0; a non-number part is 0)."""
    major, minor, patch = ([int(p) if p.isdigit() else 0 for p in text.split(".")[:3]]
                           + [0, 0, 0])[:3]
    return major, minor, patch


@dataclass(frozen=True)
class NbCapabilities:
    """What one Northbound schema supports (see the module docstring)."""

    schema_version: str
    acl_tier: bool
    nat_match: bool
    router_peering: bool

    @classmethod
    def from_columns(cls, version: str, columns: Mapping[str, Any]) -> NbCapabilities:
        """From a schema's version and its tables' columns (table name → column names)."""
        def has(table: str, column: str) -> bool:
            return column in columns.get(table, ())

        return cls(schema_version=version, acl_tier=has("ACL", "tier"),
                   nat_match=has("NAT", "match"),
                   router_peering=parse_version(version) >= ROUTER_PEERING_SCHEMA)

    def describe(self) -> str:
        """``NB schema 7.18.0: ACL tiers, NAT match, transit router peering`` (or
        ``none of ...``)."""
        have = [name for name, present in (("ACL tiers", self.acl_tier),
                                           ("NAT match", self.nat_match),
                                           ("transit router peering", self.router_peering))
                if present]
        return f"NB schema {self.schema_version}: " + (", ".join(have) or
                                                       "none of ACL tiers, NAT match, "
                                                       "transit router peering")


# what the builders assume when no schema is at hand: OVN 26.03's (upstream's)
CURRENT = NbCapabilities("7.18.0", acl_tier=True, nat_match=True, router_peering=True)
# Debian 12's OVN 23.03
LEGACY = NbCapabilities("7.0.0", acl_tier=False, nat_match=False, router_peering=False)

_BY_SCHEMA: dict[int, tuple[Any, NbCapabilities]] = {}


def of_schema(schema: Any) -> NbCapabilities:
    """The capabilities of a loaded schema (``ovs.db.schema.DbSchema``: the writer's
    ``schema``, an IDL's), remembered per schema object."""
    cached = _BY_SCHEMA.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    found = NbCapabilities.from_columns(
        str(schema.version), {name: table.columns for name, table in schema.tables.items()})
    _BY_SCHEMA[id(schema)] = (schema, found)
    return found


def of_writer(nb: Any) -> NbCapabilities:
    """The capabilities of the NB a writer (anything with a ``schema``, as
    ``declarative.RowWriter``) is connected to."""
    return of_schema(nb.schema)
