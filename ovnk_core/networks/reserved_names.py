"""Network names a NAD may not use: those whose OVN names would be the default network's.

Every OVN object of a user-defined network is named from its prefix
``P = name with '-' and '/' replaced by '.', then '_'`` (``network_prefix``);
the default network's prefix is empty.  The default network's names are
``<node>``, ``join``, ``ext_<node>``, ``ovn_cluster_router``, ``GR_<node>``
and ports ``rtos-``/``stor-``/``k8s-<node>``, ``rtoj-``/``jtor-``/``rtoe-``/
``etor-GR_<node>``, ``<bridge>_<node>``, ``rtoj-``/``jtor-ovn_cluster_router``
and ``<ns>_<pod>``.  A network's own names are the same with ``P`` inserted
where the default has nothing.  Since ``P`` never contains ``-`` and always
ends with ``_``, and node names contain no ``_``, the only names that can be
equal (in one table, or as datapath names, which ovn-trace and ovn-northd
share between switches and routers) are a network's node switch ``P<node>``
and the default network's ``ext_<node>`` (external switch) and ``GR_<node>``
(gateway router): exactly the networks whose prefix is ``ext_`` or ``GR_``,
i.e. the names ``ext`` and ``GR``.  Upstream also reserves ``default`` (the
default network itself) and ``ovn-kubernetes``, with its own message.
"""

from __future__ import annotations

UPSTREAM_RESERVED = ("default", "ovn-kubernetes")
# Default-network name prefixes (before the node name) a network prefix could equal.
DEFAULT_NODE_PREFIXES = ("ext_", "GR_")


def reserved_name_problem(name: str) -> str | None:
    """Why a NAD's netconf may not use network ``name`` (``None``: it may)."""
    if name in UPSTREAM_RESERVED:
        return f"invalid name in in secondary network netconf ({name})"  # upstream's wording
    prefix = name.replace("-", ".").replace("/", ".") + "_"
    if prefix in DEFAULT_NODE_PREFIXES:
        kind = "external switches" if prefix == "ext_" else "gateway routers"
        return (f"network name {name!r} is reserved: its node switches would be named "
                f"{prefix}<node>, like the default network's {kind}")
    return None
