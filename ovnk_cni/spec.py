"""The CNI specification 1.1 as ovnk's plugin and the node agent both check it (stdlib only).

``parse_call`` turns a plugin invocation (its ``CNI_*`` environment and the netconf on
stdin) into a ``CniCall`` or raises ``CniError`` with the spec's well-known code and the
message libcni's ``skel`` gives for the same fault, so a runtime sees what it sees from any
other plugin.  The plugin runs it before it forwards a call, and the node agent again on
what reaches its socket (anything may write there).  ``build_result`` renders the ADD
result in the shape of the requested ``cniVersion`` (``ips[].version`` only before 1.0.0).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CURRENT_VERSION = "1.1.0"
SUPPORTED_VERSIONS = ("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
COMMANDS = ("ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC")

# well-known error codes (SPEC.md, "Error")
INCOMPATIBLE_VERSION = 1
UNSUPPORTED_FIELD = 2
UNKNOWN_CONTAINER = 3
INVALID_ENVIRONMENT = 4
IO_FAILURE = 5
DECODING_FAILURE = 6
INVALID_NETWORK_CONFIG = 7
TRY_AGAIN_LATER = 11
PLUGIN_NOT_AVAILABLE = 50
# ovnk's own (100 and up, as the spec reserves them for plugins)
REFUSED = 100  # the pod's networks cannot be attached on this node (the reason says why)
PLUMBING_FAILED = 101  # the kernel or OVS refused a change
CHECK_FAILED = 102  # CHECK found the pod's interfaces other than ADD left them

# which command needs which variable (as libcni's skel requires them)
REQUIRED_ENV: Mapping[str, frozenset[str]] = {
    "CNI_CONTAINERID": frozenset({"ADD", "CHECK", "DEL"}),
    "CNI_NETNS": frozenset({"ADD", "CHECK"}),
    "CNI_IFNAME": frozenset({"ADD", "CHECK", "DEL"}),
    "CNI_PATH": frozenset({"ADD", "CHECK", "DEL", "GC", "STATUS"}),
}
POD_ARGS = ("K8S_POD_NAMESPACE", "K8S_POD_NAME")
_VALID_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$")
MAX_IFNAME = 15


class CniError(Exception):
    """A spec error: ``{"cniVersion", "code", "msg", "details"}`` on stdout, exit 1."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(f"{msg}: {details}" if details else msg)
        self.code = code
        self.msg = msg
        self.details = details

    def to_json(self, cni_version: str = CURRENT_VERSION) -> dict[str, Any]:
        body: dict[str, Any] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            body["details"] = self.details
        return body


@dataclass(frozen=True)
class CniCall:
    """One invocation, checked."""

    command: str
    netconf: dict[str, Any]
    cni_version: str
    container_id: str = ""
    netns: str = ""
    ifname: str = ""
    args: dict[str, str] = field(default_factory=dict)
    path: str = ""

    @property
    def pod_namespace(self) -> str:
        return self.args.get("K8S_POD_NAMESPACE", "")

    @property
    def pod_name(self) -> str:
        return self.args.get("K8S_POD_NAME", "")

    @property
    def pod_uid(self) -> str:
        return self.args.get("K8S_POD_UID", "")


def version_key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return (-1,)


def version_info(requested: str = "") -> dict[str, Any]:
    """The VERSION answer."""
    return {"cniVersion": requested if requested in SUPPORTED_VERSIONS else CURRENT_VERSION,
            "supportedVersions": list(SUPPORTED_VERSIONS)}


def parse_cni_args(raw: str) -> dict[str, str]:
    """``CNI_ARGS`` (``K=V;K=V``)."""
    result: dict[str, str] = {}
    for pair in filter(None, raw.split(";")):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CniError(INVALID_ENVIRONMENT, "ARGS: invalid pair", repr(pair))
        result[key] = value
    return result


def _check_container_id(value: str) -> None:
    if not _VALID_NAME.match(value):
        raise CniError(INVALID_ENVIRONMENT, "invalid characters in containerID", value)


def _check_ifname(value: str) -> None:
    if len(value) > MAX_IFNAME:
        raise CniError(INVALID_ENVIRONMENT, "interface name is too long",
                       f"interface name should be less than {MAX_IFNAME + 1} characters")
    if value in (".", ".."):
        raise CniError(INVALID_ENVIRONMENT, "interface name is . or ..")
    if any(c in "/:" or c.isspace() for c in value):
        raise CniError(INVALID_ENVIRONMENT,
                       "interface name contains / or : or whitespace characters")


def parse_netconf(stdin: bytes) -> dict[str, Any]:
    """The network configuration on stdin, checked for what every plugin needs."""
    try:
        netconf = json.loads(stdin)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CniError(DECODING_FAILURE, f"error unmarshall network config: {exc}") from None
    if not isinstance(netconf, dict):
        raise CniError(DECODING_FAILURE, "error unmarshall network config: "
                       f"a JSON object is expected, not {type(netconf).__name__}")
    version = netconf.get("cniVersion")
    if not isinstance(version, str) or version not in SUPPORTED_VERSIONS:
        raise CniError(INCOMPATIBLE_VERSION, "incompatible CNI versions",
                       f"config is {json.dumps(version)}, plugin supports "
                       f"{json.dumps(list(SUPPORTED_VERSIONS))}")
    name = netconf.get("name")
    if not isinstance(name, str) or not name:
        raise CniError(INVALID_NETWORK_CONFIG, "missing network name")
    if not _VALID_NAME.match(name):
        raise CniError(INVALID_NETWORK_CONFIG, "invalid characters found in network name",
                       name)
    if not isinstance(netconf.get("type"), str) or not netconf["type"]:
        raise CniError(INVALID_NETWORK_CONFIG, "missing plugin type")
    return netconf


def parse_call(env: Mapping[str, str], stdin: bytes) -> CniCall:
    """Check one invocation (not VERSION: ``version_info`` answers that without a netconf)."""
    command = env.get("CNI_COMMAND", "")
    if not command:
        raise CniError(INVALID_ENVIRONMENT, "required env variables [CNI_COMMAND] missing")
    if command not in COMMANDS or command == "VERSION":
        raise CniError(INVALID_ENVIRONMENT, f"unknown CNI_COMMAND: {command}")
    missing = [name for name, commands in REQUIRED_ENV.items()
               if command in commands and not env.get(name)]
    if missing:
        raise CniError(INVALID_ENVIRONMENT,
                       f"required env variables [{','.join(missing)}] missing")
    if env.get("CNI_CONTAINERID") and command in REQUIRED_ENV["CNI_CONTAINERID"]:
        _check_container_id(env["CNI_CONTAINERID"])
    if env.get("CNI_IFNAME") and command in REQUIRED_ENV["CNI_IFNAME"]:
        _check_ifname(env["CNI_IFNAME"])
    args = parse_cni_args(env.get("CNI_ARGS", ""))
    netconf = parse_netconf(stdin)
    version = str(netconf["cniVersion"])
    if command in ("STATUS", "GC") and version_key(version) < (1, 1, 0):
        raise CniError(INCOMPATIBLE_VERSION, f"config version does not allow {command}")
    if command == "CHECK" and version_key(version) < (0, 4, 0):
        raise CniError(INCOMPATIBLE_VERSION, "config version does not allow CHECK")
    if command in ("ADD", "CHECK"):
        missing = [name for name in POD_ARGS if not args.get(name)]
        if missing:
            raise CniError(INVALID_ENVIRONMENT,
                           f"required CNI_ARGS [{','.join(missing)}] missing",
                           "ovn-k8s-cni-overlay wires Kubernetes pods: the runtime passes "
                           "the pod's namespace and name in CNI_ARGS")
    return CniCall(command, netconf, version, env.get("CNI_CONTAINERID", ""),
                   env.get("CNI_NETNS", ""), env.get("CNI_IFNAME", ""), args,
                   env.get("CNI_PATH", ""))


@dataclass(frozen=True)
class ResultInterface:
    """One interface of the pod, for the ADD result."""

    name: str
    mac: str
    addresses: Sequence[str]  # CIDRs
    gateways: Sequence[str]
    routes: Sequence[tuple[str, str]]  # (destination, next hop)


def build_result(version: str, sandbox: str,
                 interfaces: Sequence[ResultInterface]) -> dict[str, Any]:
    """The ADD result: every interface in ``sandbox``, its addresses (with the gateway of
    their family), the default route of each family via its gateway and the explicit
    routes."""
    legacy = version_key(version) < (1, 0, 0)
    result: dict[str, Any] = {"cniVersion": version, "interfaces": [], "ips": [],
                              "routes": [], "dns": {}}
    for index, interface in enumerate(interfaces):
        entry: dict[str, Any] = {"name": interface.name, "sandbox": sandbox}
        if interface.mac:
            entry["mac"] = interface.mac
        result["interfaces"].append(entry)
        gateways = {ipaddress.ip_address(g).version: g for g in interface.gateways}
        for cidr in interface.addresses:
            family = ipaddress.ip_interface(cidr).version
            ip: dict[str, Any] = {"address": cidr, "interface": index}
            if family in gateways:
                ip["gateway"] = gateways[family]
            if legacy:
                ip["version"] = str(family)
            result["ips"].append(ip)
        for family, gateway in sorted(gateways.items()):
            result["routes"].append({"dst": "0.0.0.0/0" if family == 4 else "::/0",
                                     "gw": gateway})
        for destination, next_hop in interface.routes:
            result["routes"].append({"dst": destination, "gw": next_hop})
    return result
