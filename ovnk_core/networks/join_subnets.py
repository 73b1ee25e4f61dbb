"""What a primary network's join subnets must be: one per IP family it uses, big enough.

The join subnet links a network's cluster router (its ``.1``) to every node's
gateway router, which takes the address ``base + node ID``.  A join subnet of
a family the network has no subnets in is never used, so a network whose
only join subnet is of the other family renders no gateway at all; one too
small for the node IDs gives gateway routers addresses outside it.  Node IDs
are handed out round-robin (node churn reaches high IDs in small clusters too)
and a node keeps any ID up to ``MAX_NODE_ID - 1`` it carries (an older release
handed out that many), so the subnet must hold all of them.  Shared by
the UDN/CUDN admission rules and the netconf parsing of NADs, which word the
same problem for their own field names.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovnk_core.annotations.node_id import MAX_NODE_ID
from ovnk_core.config.values import IPNetwork

HIGHEST_NODE_ID = MAX_NODE_ID - 1


def largest_prefix(version: int) -> int:
    """The longest prefix length of a join subnet that holds ``base + HIGHEST_NODE_ID``
    (and, for IPv4, still leaves it below the broadcast address): /16 and /112."""
    bits = 32 if version == 4 else 128
    needed = HIGHEST_NODE_ID + (2 if version == 4 else 1)  # + network (+ broadcast) address
    return bits - (needed - 1).bit_length()


def join_subnet_problems(field: str, joins: Iterable[IPNetwork],
                         subnet_families: Iterable[int]) -> list[str]:
    """Why ``joins`` cannot serve a network whose subnets are of ``subnet_families``;
    ``field`` names the join subnets in the messages (``joinSubnets``, ``joinSubnet``)."""
    joins = list(joins)
    problems = []
    have = {join.version for join in joins}
    for version in sorted(set(subnet_families) - have):
        problems.append(f"{field} must have a CIDR of every IP family of the subnets: "
                        f"IPv{version} is missing")
    for join in joins:
        limit = largest_prefix(join.version)
        if join.prefixlen > limit:
            problems.append(f"{field} {join} is too small: it must hold the cluster router "
                            f"and a gateway router address for every node ID (up to "
                            f"{HIGHEST_NODE_ID}), so a /{limit} or larger IPv{join.version} "
                            "CIDR")
    return problems
