"""Links, addresses, routes and rules through netlink (pyroute2), per network namespace.

Every function is idempotent — "ensure" creates or corrects, "delete"
accepts absence — and works in the namespace it is given (a fresh
``IPRoute`` opened inside it, see ``node.netns``).  Kernel errors become
``NetlinkOperationError`` naming the object, and a missing kernel feature
(VRF on this machine, for instance) becomes ``CapabilityError`` so that
callers can fall back — for VRFs, to plain policy-routing tables — and say
so in an event instead of failing.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from ovnk_core.errors import CapabilityError, OvnkError
from ovnk_core.node.netns import run_in_netns

log = logging.getLogger(__name__)
T = TypeVar("T")


class NetlinkOperationError(OvnkError):
    """The kernel refused a netlink request; the message names the object."""


def _with_ipr(netns: str | None, func: Callable[[IPRoute], T]) -> T:
    def run() -> T:
        with IPRoute() as ipr:
            return func(ipr)
    return run_in_netns(netns, run)


def _fail(what: str, netns: str | None, exc: NetlinkError) -> NetlinkOperationError:
    where = f" in netns {netns}" if netns else ""
    return NetlinkOperationError(f"{what}{where}: {exc.args[1] if len(exc.args) > 1 else exc}")


def _index(ipr: IPRoute, ifname: str) -> int | None:
    found = ipr.link_lookup(ifname=ifname)
    return int(found[0]) if found else None


# -- links -----------------------------------------------------------------------------------
def link_index(ifname: str, netns: str | None = None) -> int | None:
    return _with_ipr(netns, lambda ipr: _index(ipr, ifname))


def link_info(ifname: str, netns: str | None = None) -> dict[str, Any] | None:
    """``{"index", "mtu", "mac", "up", "kind", "master"}`` of a link, or ``None``."""
    def read(ipr: IPRoute) -> dict[str, Any] | None:
        index = _index(ipr, ifname)
        if index is None:
            return None
        link = ipr.link("get", index=index)[0]
        info = link.get_attr("IFLA_LINKINFO")
        return {"index": index, "mtu": link.get_attr("IFLA_MTU"),
                "mac": link.get_attr("IFLA_ADDRESS"), "up": bool(link["flags"] & 1),
                "kind": info.get_attr("IFLA_INFO_KIND") if info else None,
                "master": link.get_attr("IFLA_MASTER")}
    return _with_ipr(netns, read)


def ensure_veth(ifname: str, peer: str, netns: str | None = None,
                peer_netns: str | None = None) -> None:
    """A veth pair ``ifname`` (in ``netns``) — ``peer`` (moved into ``peer_netns``)."""
    def create(ipr: IPRoute) -> None:
        if _index(ipr, ifname) is not None:
            return
        try:
            ipr.link("add", ifname=ifname, kind="veth", peer={"ifname": peer})
        except NetlinkError as exc:
            raise _fail(f"create veth {ifname}/{peer}", netns, exc) from None
        if peer_netns is not None:
            peer_index = _index(ipr, peer)
            try:
                ipr.link("set", index=peer_index, net_ns_fd=peer_netns)
            except NetlinkError as exc:
                raise _fail(f"move {peer} to netns {peer_netns}", netns, exc) from None
    _with_ipr(netns, create)


def ensure_bridge(ifname: str, netns: str | None = None) -> None:
    def create(ipr: IPRoute) -> None:
        if _index(ipr, ifname) is None:
            try:
                ipr.link("add", ifname=ifname, kind="bridge")
            except NetlinkError as exc:
                raise _fail(f"create bridge {ifname}", netns, exc) from None
    _with_ipr(netns, create)


def set_link(ifname: str, netns: str | None = None, up: bool | None = None,
             mtu: int | None = None, mac: str | None = None, master: str | None = None) -> None:
    """Set state, MTU, MAC address or master (bridge/VRF) of an existing link."""
    def apply(ipr: IPRoute) -> None:
        index = _index(ipr, ifname)
        if index is None:
            raise NetlinkOperationError(f"link {ifname} not found"
                                        + (f" in netns {netns}" if netns else ""))
        changes: dict[str, Any] = {}
        if mtu is not None:
            changes["mtu"] = mtu
        if mac is not None:
            changes["address"] = mac
        if master is not None:
            master_index = _index(ipr, master)
            if master_index is None:
                raise NetlinkOperationError(f"master {master} of {ifname} not found")
            changes["master"] = master_index
        if up is not None:
            changes["state"] = "up" if up else "down"
        if changes:
            try:
                ipr.link("set", index=index, **changes)
            except NetlinkError as exc:
                raise _fail(f"set {ifname} {changes}", netns, exc) from None
    _with_ipr(netns, apply)


def rename_link(ifname: str, new_name: str, netns: str | None = None) -> None:
    """Rename a link (it must be down; a fresh veth end is)."""
    def rename(ipr: IPRoute) -> None:
        index = _index(ipr, ifname)
        if index is None:
            if _index(ipr, new_name) is not None:
                return  # already renamed
            raise NetlinkOperationError(f"link {ifname} not found"
                                        + (f" in netns {netns}" if netns else ""))
        try:
            ipr.link("set", index=index, ifname=new_name)
        except NetlinkError as exc:
            raise _fail(f"rename {ifname} to {new_name}", netns, exc) from None
    _with_ipr(netns, rename)


def delete_link(ifname: str, netns: str | None = None) -> bool:
    """Delete a link; False when it was not there."""
    def delete(ipr: IPRoute) -> bool:
        index = _index(ipr, ifname)
        if index is None:
            return False
        try:
            ipr.link("del", index=index)
        except NetlinkError as exc:
            if exc.code == errno.ENODEV:
                return False
            raise _fail(f"delete link {ifname}", netns, exc) from None
        return True
    return _with_ipr(netns, delete)


# -- addresses -------------------------------------------------------------------------------
def list_addresses(ifname: str, netns: str | None = None) -> list[str]:
    """Addresses of a link in CIDR form (``10.0.0.2/24``), link-local IPv6 excluded."""
    def read(ipr: IPRoute) -> list[str]:
        index = _index(ipr, ifname)
        if index is None:
            return []
        result = []
        for addr in ipr.get_addr(index=index):
            text = f"{addr.get_attr('IFA_ADDRESS')}/{addr['prefixlen']}"
            ip = ipaddress.ip_interface(text).ip
            if not (ip.version == 6 and ip.is_link_local):
                result.append(text)
        return sorted(result)
    return _with_ipr(netns, read)


IFA_F_NODAD = 0x02
IFA_F_NOPREFIXROUTE = 0x200


def ensure_address(ifname: str, cidr: str, netns: str | None = None,
                   prefix_route: bool = True) -> bool:
    """Add ``cidr`` (``a.b.c.d/nn``) to the link; False when it was already there.

    ``prefix_route=False`` keeps the kernel from adding the subnet's route to the main
    table (the caller routes the subnet in a table of its own).  An IPv6 address is usable
    at once (``nodad``): every address ovnk adds is its own by allocation, and one still in
    duplicate address detection could be neither a source nor a destination.
    """
    interface = ipaddress.ip_interface(cidr)

    def add(ipr: IPRoute) -> bool:
        index = _index(ipr, ifname)
        if index is None:
            raise NetlinkOperationError(f"link {ifname} not found for address {cidr}")
        flags = (0 if prefix_route else IFA_F_NOPREFIXROUTE) | \
            (IFA_F_NODAD if interface.version == 6 else 0)
        extra: dict[str, Any] = {"IFA_FLAGS": flags} if flags else {}
        try:
            ipr.addr("add", index=index, address=str(interface.ip),
                     prefixlen=interface.network.prefixlen, **extra)
        except NetlinkError as exc:
            if exc.code == errno.EEXIST:
                return False
            raise _fail(f"add address {cidr} to {ifname}", netns, exc) from None
        return True
    return _with_ipr(netns, add)


def delete_address(ifname: str, cidr: str, netns: str | None = None) -> bool:
    interface = ipaddress.ip_interface(cidr)

    def delete(ipr: IPRoute) -> bool:
        index = _index(ipr, ifname)
        if index is None:
            return False
        try:
            ipr.addr("del", index=index, address=str(interface.ip),
                     prefixlen=interface.network.prefixlen)
        except NetlinkError as exc:
            if exc.code in (errno.EADDRNOTAVAIL, errno.ENOENT, errno.ESRCH):
                return False
            raise _fail(f"delete address {cidr} from {ifname}", netns, exc) from None
        return True
    return _with_ipr(netns, delete)


# -- neighbours --------------------------------------------------------------------------------
NUD_PERMANENT = 0x80


def ensure_neighbor(ip: str, mac: str, ifname: str, netns: str | None = None) -> None:
    """A permanent neighbour entry ``ip`` → ``mac`` on ``ifname`` (replaced if different)."""
    def replace(ipr: IPRoute) -> None:
        index = _index(ipr, ifname)
        if index is None:
            raise NetlinkOperationError(f"neighbour {ip}: device {ifname} not found")
        family = 2 if ipaddress.ip_address(ip).version == 4 else 10
        try:
            ipr.neigh("replace", dst=ip, lladdr=mac, ifindex=index, state=NUD_PERMANENT,
                      family=family)
        except NetlinkError as exc:
            raise _fail(f"neighbour {ip} lladdr {mac} dev {ifname}", netns, exc) from None
    _with_ipr(netns, replace)


# -- routes ----------------------------------------------------------------------------------
def _route_args(ipr: IPRoute, dst: str, gateway: str | None, oif: str | None,
                table: int, metric: int | None) -> dict[str, Any]:
    network = ipaddress.ip_network(dst)
    args: dict[str, Any] = {"dst": str(network), "table": table}
    if network.prefixlen == 0:
        args["dst"] = "default" if network.version == 4 else "::/0"
        args["family"] = 2 if network.version == 4 else 10
    if gateway:
        args["gateway"] = gateway
    if oif:
        index = _index(ipr, oif)
        if index is None:
            raise NetlinkOperationError(f"route {dst}: device {oif} not found")
        args["oif"] = index
    if metric is not None:
        args["priority"] = metric
    return args


RTNH_F_ONLINK = 4


def ensure_route(dst: str, gateway: str | None = None, oif: str | None = None,
                 table: int = 254, metric: int | None = None, netns: str | None = None,
                 onlink: bool = False, prefsrc: str | None = None,
                 mtu: int | None = None) -> None:
    """Make the route to ``dst`` in ``table`` (254 = main) exactly this one.

    Routes to the same destination with another metric are distinct to the
    kernel; they are removed so only the described route remains.  ``onlink``
    takes the gateway as directly reachable on ``oif`` (needed in a table of its own,
    where the kernel cannot check the gateway against the main table's routes).
    ``prefsrc`` is the source address the host's own packets take, ``mtu`` the route's
    MTU metric.
    """
    def replace(ipr: IPRoute) -> None:
        args = _route_args(ipr, dst, gateway, oif, table, metric)
        if onlink:
            args["flags"] = RTNH_F_ONLINK
        if prefsrc:
            args["prefsrc"] = prefsrc
        if mtu:
            args["metrics"] = {"mtu": mtu}
        network = ipaddress.ip_network(dst)
        family = 2 if network.version == 4 else 10
        for route in ipr.route("dump", family=family, table=table):
            same_dst = (route.get_attr("RTA_DST") == (str(network.network_address)
                                                       if network.prefixlen else None)
                        and route["dst_len"] == network.prefixlen)
            if same_dst and route.get_attr("RTA_TABLE") == table and \
                    route.get_attr("RTA_PRIORITY") != metric:
                ipr.route("del", family=family, table=table, dst=args["dst"],
                          priority=route.get_attr("RTA_PRIORITY") or 0)
        try:
            ipr.route("replace", **args)
        except NetlinkError as exc:
            via = f" via {gateway}" if gateway else ""
            raise _fail(f"route {dst}{via} table {table}", netns, exc) from None
    _with_ipr(netns, replace)


def delete_route(dst: str, table: int = 254, netns: str | None = None) -> bool:
    def delete(ipr: IPRoute) -> bool:
        args = _route_args(ipr, dst, None, None, table, None)
        try:
            ipr.route("del", **args)
        except NetlinkError as exc:
            if exc.code in (errno.ESRCH, errno.ENOENT):
                return False
            raise _fail(f"delete route {dst} table {table}", netns, exc) from None
        return True
    return _with_ipr(netns, delete)


def list_routes(table: int = 254, netns: str | None = None) -> list[dict[str, Any]]:
    """Routes of ``table`` as ``{"dst", "gateway", "oif", "metric"}`` (dst in CIDR form)."""
    def read(ipr: IPRoute) -> list[dict[str, Any]]:
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
        result = []
        for family in (2, 10):
            for route in ipr.route("dump", family=family, table=table):
                if route.get_attr("RTA_TABLE") != table:
                    continue
                dst = route.get_attr("RTA_DST")
                default = "0.0.0.0/0" if family == 2 else "::/0"
                result.append({
                    "dst": f"{dst}/{route['dst_len']}" if dst else default,
                    "gateway": route.get_attr("RTA_GATEWAY"),
                    "oif": names.get(route.get_attr("RTA_OIF")),
                    "metric": route.get_attr("RTA_PRIORITY")})
        return result
    return _with_ipr(netns, read)


# -- rules -----------------------------------------------------------------------------------
def _rule_matches(rule: Any, priority: int, table: int, selector: dict[str, Any]) -> bool:
    if rule.get_attr("FRA_PRIORITY") != priority or rule.get_attr("FRA_TABLE", rule["table"]) \
            != table:
        return False
    for end in ("src", "dst"):
        wanted = selector.get(end)
        if wanted is not None:
            network = ipaddress.ip_network(wanted)
            if rule.get_attr(f"FRA_{end.upper()}") != str(network.network_address) or \
                    rule[f"{end}_len"] != network.prefixlen:
                return False
    if selector.get("iifname") is not None and rule.get_attr("FRA_IIFNAME") != \
            selector["iifname"]:
        return False
    if selector.get("oifname") is not None and rule.get_attr("FRA_OIFNAME") != \
            selector["oifname"]:
        return False
    return not (selector.get("fwmark") is not None
                and rule.get_attr("FRA_FWMARK") != selector["fwmark"])


def ensure_rule(priority: int, table: int, src: str | None = None, iifname: str | None = None,
                fwmark: int | None = None, netns: str | None = None,
                oifname: str | None = None, version: int = 4, dst: str | None = None) -> bool:
    """An ip rule ``priority: from src to dst iif X oif Y fwmark M lookup table``; False if
    present.

    :param version: the rule's IP version when neither ``src`` nor ``dst`` says it."""
    given = src or dst
    family = ipaddress.ip_network(given).version if given else version
    selector = {"src": src, "dst": dst, "iifname": iifname, "fwmark": fwmark,
                "oifname": oifname}

    def add(ipr: IPRoute) -> bool:
        for rule in ipr.get_rules(family=2 if family == 4 else 10):
            if _rule_matches(rule, priority, table, selector):
                return False
        args: dict[str, Any] = {"table": table, "priority": priority,
                                "family": 2 if family == 4 else 10}
        if src:
            network = ipaddress.ip_network(src)
            args.update(src=str(network.network_address), src_len=network.prefixlen)
        if dst:
            network = ipaddress.ip_network(dst)
            args.update(dst=str(network.network_address), dst_len=network.prefixlen)
        if iifname:
            args["iifname"] = iifname
        if oifname:
            args["oifname"] = oifname
        if fwmark is not None:
            args.update(fwmark=fwmark, fwmask=0xFFFFFFFF)
        try:
            ipr.rule("add", **args)
        except NetlinkError as exc:
            raise _fail(f"ip rule {priority} lookup {table}", netns, exc) from None
        return True
    return _with_ipr(netns, add)


def delete_rule(priority: int, table: int, src: str | None = None, iifname: str | None = None,
                fwmark: int | None = None, netns: str | None = None, version: int = 4,
                oifname: str | None = None, dst: str | None = None) -> bool:
    given = src or dst
    family = ipaddress.ip_network(given).version if given else version
    selector = {"src": src, "dst": dst, "iifname": iifname, "fwmark": fwmark,
                "oifname": oifname}

    def delete(ipr: IPRoute) -> bool:
        for rule in ipr.get_rules(family=2 if family == 4 else 10):
            if _rule_matches(rule, priority, table, selector):
                ipr.rule("del", family=2 if family == 4 else 10, priority=priority,
                         table=table)
                return True
        return False
    return _with_ipr(netns, delete)


def list_rules(netns: str | None = None) -> list[dict[str, Any]]:
    """Every rule of both IP versions (``version`` 4 or 6)."""
    def read(ipr: IPRoute) -> list[dict[str, Any]]:
        result = []
        for rule in ipr.get_rules():
            src, dst = rule.get_attr("FRA_SRC"), rule.get_attr("FRA_DST")
            result.append({"version": 4 if rule["family"] == 2 else 6,
                           "priority": rule.get_attr("FRA_PRIORITY"),
                           "table": rule.get_attr("FRA_TABLE", rule["table"]),
                           "src": f"{src}/{rule['src_len']}" if src else None,
                           "dst": f"{dst}/{rule['dst_len']}" if dst else None,
                           "iifname": rule.get_attr("FRA_IIFNAME"),
                           "oifname": rule.get_attr("FRA_OIFNAME"),
                           "fwmark": rule.get_attr("FRA_FWMARK")})
        return result
    return _with_ipr(netns, read)


# -- VRF ---------------------------------------------------------------------------------------
def ensure_vrf(name: str, table: int, netns: str | None = None) -> None:
    """A VRF device bound to ``table``.

    :raises CapabilityError: the kernel has no VRF support (callers fall back to
        policy-routing tables).
    """
    def create(ipr: IPRoute) -> None:
        if _index(ipr, name) is not None:
            return
        try:
            ipr.link("add", ifname=name, kind="vrf", vrf_table=table)
        except NetlinkError as exc:
            if exc.code in (errno.EOPNOTSUPP, errno.ENOTSUP):
                raise CapabilityError("vrf", f"cannot create VRF {name}: the kernel does not "
                                             "support VRF devices") from None
            raise _fail(f"create VRF {name} table {table}", netns, exc) from None
    _with_ipr(netns, create)


def vrf_supported(netns: str | None = None) -> bool:
    """Probe: create and remove a temporary VRF."""
    probe = "ovnk-vrf-probe"
    try:
        ensure_vrf(probe, 4242, netns)
    except CapabilityError:
        return False
    delete_link(probe, netns)
    return True
