"""A pod's ``k8s.v1.cni.cncf.io/networks``: the secondary networks it asks for, checked.

The annotation is either a comma list (``nad``, ``ns/nad``, ``nad@ifname``)
or a JSON list of network selection elements, parsed as Multus and upstream's
``ParsePodNetworkAnnotation`` parse it, with their messages.  What ovnk cannot
honour is refused instead of being ignored: a static ``ips`` or ``mac``
request (ovnk allocates every address and derives every MAC itself), and the
same NAD listed twice (upstream: "more than one of the same NAD") and the
namespace's primary NAD.  A NAD that does not exist is waited for (Multus'
message); other CNI plugins' NADs are left to Multus.  The pod allocator
reports each refusal as a Warning event ``ErrorAllocatingPod`` on the pod;
the zone controller uses the same parse to know which networks a pod may use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovnk_core import embedded_json
from ovnk_core.errors import OvnkError, PermanentError
from ovnk_core.networks import nad_config

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
IPAM_CLAIM_REFERENCE = "ipam-claim-reference"
REASON = "ErrorAllocatingPod"  # upstream's cluster-manager pod allocator event reason
UPSTREAM = "parsePodNetworkAnnotation: "  # Multus' prefix of its own parse errors
_ITEM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_INTERFACE = "eth0"  # the pod's default-network interface
PRIMARY_UDN_INTERFACE = "ovn-udn1"  # its primary user-defined network's
IFNAMSIZ = 16  # the kernel's limit, the terminating NUL included
_GO_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array",
                  dict: "object"}


class NetworkSelectionError(PermanentError):
    """The annotation cannot be honoured; retrying helps only once the pod changes."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason=REASON)


@dataclass(frozen=True)
class NetworkSelection:
    namespace: str
    name: str
    interface: str = ""
    ipam_claim: str = ""  # the element's ipam-claim-reference (an IPAMClaim of the pod's ns)

    @property
    def nad_key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _parse_item(text: str) -> tuple[str, str, str]:
    """(namespace, name, interface) of one comma-list item (Multus' rules and messages)."""
    parts = text.split("/")
    if len(parts) > 2:
        raise ValueError(f"{UPSTREAM}Invalid network object (failed at '/')")
    namespace, name = (parts[0].strip(), parts[1]) if len(parts) == 2 else ("", parts[0])
    at = name.split("@")
    if len(at) > 2:
        raise ValueError(f"{UPSTREAM}Invalid network object (failed at '@')")
    name, interface = at[0].strip(), at[1].strip() if len(at) == 2 else ""
    for item in (namespace, name, interface):
        if item and not _ITEM.match(item):
            raise ValueError(f"{UPSTREAM}Failed to parse: one or more items did not match "
                             "comma-delimited format (must consist of lower case alphanumeric "
                             "characters). Must start and end with an alphanumeric character), "
                             f"mismatch @ '{item}'")
    return namespace, name, interface


def _element(index: int, item: Any, namespace: str) -> NetworkSelection:
    if not isinstance(item, dict):
        kind = _GO_JSON_TYPES.get(type(item), "null")
        raise ValueError(f"{UPSTREAM}failed to parse pod Network Attachment Selection "
                         f"Annotation JSON format: json: cannot unmarshal {kind} into Go value "
                         "of type v1.NetworkSelectionElement")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"network selection element {index} has no name")
    ns = item.get("namespace") or namespace
    interface = item.get("interface") or ""
    if not isinstance(ns, str) or not isinstance(interface, str):
        raise ValueError(f"network selection element {index} ({name}): namespace and "
                         "interface must be strings")
    if interface and not valid_interface_name(interface):
        raise ValueError(f"network selection element {index} ({name}): interface "
                         f"{interface!r} is not a valid interface name (1 to {IFNAMSIZ - 1} "
                         "characters, none of them '/', ':' or white space, not '.' or '..')")
    claim = item.get(IPAM_CLAIM_REFERENCE) or ""
    if not isinstance(claim, str):
        raise ValueError(f"network selection element {index} ({name}): "
                         f"{IPAM_CLAIM_REFERENCE} must be a string")
    selection = NetworkSelection(ns, name, interface, claim)
    if item.get("ips"):
        raise ValueError(f"static IPs {item['ips']} requested for NAD {selection.nad_key} are "
                         "not supported: ovnk allocates every address itself (remove \"ips\")")
    if item.get("mac"):
        raise ValueError(f"static MAC {item['mac']} requested for NAD {selection.nad_key} is "
                         "not supported: ovnk derives every MAC from the pod's address "
                         "(remove \"mac\")")
    return selection


def parse_selections(raw: str, namespace: str) -> list[NetworkSelection]:
    """The selections of an annotation value (``namespace``: the pod's, for unqualified
    names).

    :raises ValueError: Multus' message (prefixed as Multus prefixes it), or ovnk's for
        what it cannot honour.
    """
    if not raw.strip():
        return []
    if any(ch in raw for ch in '[{"'):
        try:
            document = embedded_json.loads(raw)  # too deep, a lone surrogate: ValueErrors
        except ValueError as exc:
            raise ValueError(f"{UPSTREAM}failed to parse pod Network Attachment Selection "
                             f"Annotation JSON format: {exc}") from None
        if not isinstance(document, list):
            kind = _GO_JSON_TYPES.get(type(document), "null")
            raise ValueError(f"{UPSTREAM}failed to parse pod Network Attachment Selection "
                             f"Annotation JSON format: json: cannot unmarshal {kind} into Go "
                             "value of type []*v1.NetworkSelectionElement")
        return [_element(index, item, namespace) for index, item in enumerate(document)]
    selections = []
    for index, text in enumerate(raw.split(",")):
        ns, name, interface = _parse_item(text.strip())
        if not name:
            raise ValueError(f"network selection element {index} has no name")
        selections.append(NetworkSelection(ns or namespace, name, interface))
    return selections


def pod_selections(pod: dict[str, Any]) -> list[NetworkSelection]:
    """The pod's selections, each NAD once.

    :raises NetworkSelectionError: with upstream's wording where upstream has one.
    """
    meta = pod["metadata"]
    pod_key = f"{meta.get('namespace')}/{meta.get('name')}"
    raw = (meta.get("annotations") or {}).get(NETWORKS_ANNOTATION) or ""
    try:
        selections = parse_selections(raw, str(meta.get("namespace")))
    except ValueError as exc:
        raise NetworkSelectionError(f"failed to get all NetworkSelectionElements for pod "
                                    f"{pod_key}: {exc}") from None
    seen: set[str] = set()
    for selection in selections:
        if selection.nad_key in seen:
            raise NetworkSelectionError(f"unexpected error: more than one of the same NAD "
                                        f"{selection.nad_key} specified for pod {pod_key}")
        seen.add(selection.nad_key)
    names = list(interface_names(selections).values())
    for ifname in names:
        if ifname in (DEFAULT_INTERFACE, PRIMARY_UDN_INTERFACE) or names.count(ifname) > 1:
            raise NetworkSelectionError(f"pod {pod_key}: interface {ifname!r} is asked for "
                                        "twice (the pod's own interfaces are "
                                        f"{DEFAULT_INTERFACE} and {PRIMARY_UDN_INTERFACE})")
    return selections


def valid_interface_name(name: str) -> bool:
    """Whether the kernel takes ``name`` as a network interface name (dev_valid_name)."""
    return (0 < len(name) < IFNAMSIZ and name not in (".", "..")
            and not any(ch == "/" or ch == ":" or ch.isspace() for ch in name))


def interface_names(selections: list[NetworkSelection]) -> dict[str, str]:
    """NAD key → the pod's interface for it: the element's ``interface``, else ``net<N>``
    with N its position in the list, from 1 (Multus' naming)."""
    return {selection.nad_key: selection.interface or f"net{index}"
            for index, selection in enumerate(selections, start=1)}


class MissingNad(OvnkError):
    """A selected NAD does not exist (yet): the pod waits for it."""


def requested_networks(pod: dict[str, Any]) -> list[str]:
    """NAD keys named in ``k8s.v1.cni.cncf.io/networks`` (comma list or JSON selections).

    :raises NetworkSelectionError: the annotation cannot be honoured.
    """
    return [selection.nad_key for selection in pod_selections(pod)]


def is_ovn_nad(nad: dict[str, Any]) -> bool:
    """Whether a NAD is OVN-Kubernetes' (other CNI plugins' NADs are Multus' business)."""
    return nad_config.ovn_config_of(nad) is not None


def secondary_nads(pod: dict[str, Any], primary: str | None,
                   lookup: Callable[[str], dict[str, Any] | None]) -> list[str]:
    """The OVN-Kubernetes NAD keys the pod selects as secondary networks (``lookup`` finds
    a NAD by key, from a cache).

    :raises NetworkSelectionError: the annotation cannot be honoured (see ``pod_selections``),
        or it selects the namespace's primary network, which every pod has already.
    :raises MissingNad: a selected NAD does not exist (Multus' message).
    """
    meta = pod["metadata"]
    keys = []
    for selection in pod_selections(pod):
        if selection.nad_key == primary:
            raise NetworkSelectionError(
                f"unexpected primary network NAD {primary} specified in {NETWORKS_ANNOTATION} "
                f"of pod {meta.get('namespace')}/{meta.get('name')}: it is the pod's primary "
                "network already")
        nad = lookup(selection.nad_key)
        if nad is None:
            raise MissingNad(f"cannot find a network-attachment-definition ({selection.name}) "
                             f"in namespace ({selection.namespace}): "
                             "network-attachment-definitions.k8s.cni.cncf.io "
                             f'"{selection.name}" not found')
        if is_ovn_nad(nad):
            keys.append(selection.nad_key)
    return keys
