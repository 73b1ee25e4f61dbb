"""Who owns an OVN row: the ``k8s.ovn.org/*`` external_ids every ovnk row carries.

Every row ovnk writes is stamped with:

* ``k8s.ovn.org/owner-controller`` — the controller that writes it
  (``default-network-controller``, ``<network>-network-controller``, ...);
* ``k8s.ovn.org/owner`` — the owner scope inside that controller: the unit
  reconciled in one transaction (``network``, ``node:<name>``,
  ``pod:<ns>/<name>``);
* ``k8s.ovn.org/owner-type`` and ``k8s.ovn.org/name`` — what the row is and
  its name within that type;
* ``k8s.ovn.org/id`` — the primary key, derived from the above, unique per
  table;
* and, for network-scoped rows, ``k8s.ovn.org/network``, ``topology`` and
  ``role``.

A row without ``owner-controller`` and ``id`` is foreign: ovnk never changes
or deletes it.  Sweeps select rows only through these keys.

One table cannot carry them: ``Load_Balancer_Group`` has no ``external_ids``.
Its rows are identified by their (unique) ``name`` instead, which ovnk
computes from the network's name exactly as upstream does; such a row is
ovnk's once an owner declares that name (``NAME_IDENTIFIED_TABLES``), and a
row of that name another system made is adopted rather than duplicated —
the one documented exception to "never touch what is not ours".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

PREFIX = "k8s.ovn.org/"
OWNER_CONTROLLER_KEY = PREFIX + "owner-controller"
OWNER_KEY = PREFIX + "owner"
OWNER_TYPE_KEY = PREFIX + "owner-type"
NAME_KEY = PREFIX + "name"
ID_KEY = PREFIX + "id"
NETWORK_KEY = PREFIX + "network"
TOPOLOGY_KEY = PREFIX + "topology"
ROLE_KEY = PREFIX + "role"

OWNERSHIP_KEYS = (OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY, NAME_KEY, ID_KEY)
INDEXED_KEYS = (ID_KEY, OWNER_CONTROLLER_KEY, OWNER_KEY, NETWORK_KEY)

# Tables without external_ids whose rows ovnk writes: identified by their unique ``name``,
# which is their primary id (``ObjectIDs.primary``).
NAME_IDENTIFIED_TABLES = frozenset({"Load_Balancer_Group"})
# Reference sets an owned row declares as a column (the whole set), instead of each
# member declaring its membership: a switch or router holds its network's load balancer
# groups, which belong to another owner (the network) and are the same for every node.
DECLARED_REFERENCE_COLUMNS = frozenset({("Logical_Switch", "load_balancer_group"),
                                        ("Logical_Router", "load_balancer_group")})


@dataclass(frozen=True, order=True)
class Owner:
    """The scope reconciled as one unit: all rows with this controller and owner key."""

    controller: str
    key: str

    def __str__(self) -> str:
        return f"{self.controller}/{self.key}"

    def object_ids(self, owner_type: str, name: str, network: str = "", topology: str = "",
                   role: str = "", extra: tuple[tuple[str, str], ...] = (),
                   primary: str = "") -> ObjectIDs:
        return ObjectIDs(owner=self, owner_type=owner_type, name=name, network=network,
                         topology=topology, role=role, extra=extra, primary=primary)


# The owner of a name-identified row read from NB before any owner declared it.
UNCLAIMED = Owner("", "")


@dataclass(frozen=True)
class ObjectIDs:
    """The identity of one owned row; ``primary_id`` is unique within its table."""

    owner: Owner
    owner_type: str
    name: str
    network: str = ""
    topology: str = ""
    role: str = ""
    # further identity keys, in order: each is an external_id and a part of the primary id
    # (upstream's ``direction`` of an ACL: ``<controller>:<type>:<name>:<direction>``)
    extra: tuple[tuple[str, str], ...] = ()
    # the primary id of a row of a ``NAME_IDENTIFIED_TABLES`` table: its ``name``
    primary: str = ""

    @cached_property
    def primary_id(self) -> str:
        if self.primary:
            return self.primary
        return ":".join([self.owner.controller, self.owner_type, self.name,
                         *(value for _key, value in self.extra)])

    def external_ids(self) -> dict[str, str]:
        ids = {
            OWNER_CONTROLLER_KEY: self.owner.controller,
            OWNER_KEY: self.owner.key,
            OWNER_TYPE_KEY: self.owner_type,
            NAME_KEY: self.name,
            ID_KEY: self.primary_id,
        }
        if self.network:
            ids[NETWORK_KEY] = self.network
        if self.topology:
            ids[TOPOLOGY_KEY] = self.topology
        if self.role:
            ids[ROLE_KEY] = self.role
        for key, value in self.extra:
            ids[key] = value
        return ids


def is_owned(external_ids: Mapping[str, str]) -> bool:
    """True when the row carries ovnk's ownership keys (and so may be changed by ovnk)."""
    return bool(external_ids.get(OWNER_CONTROLLER_KEY)) and bool(external_ids.get(ID_KEY))


def owner_of(external_ids: Mapping[str, str]) -> Owner | None:
    if not is_owned(external_ids):
        return None
    return Owner(external_ids[OWNER_CONTROLLER_KEY], external_ids.get(OWNER_KEY, ""))
