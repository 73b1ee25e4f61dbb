"""What a mirrored EndpointSlice must look like, computed without I/O.

A primary-UDN pod keeps its default-network IP in ``status.podIPs``, so the
default EndpointSlice controller publishes addresses that are not where the
pod listens for service traffic.  The mirror is a copy of each default slice
with every pod endpoint's address replaced by the pod's address on the
namespace's primary network, labelled so that kube-proxy and the default
controller ignore it and the UDN service code finds it.  Names, labels and
annotations are upstream's, exactly (see the mirror section of the reference).
"""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Callable
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_core.annotations.endpointslices import (
    DEFAULT_CONTROLLER,
    MANAGED_BY_LABEL,
    NETWORK_ANNOTATION,
    SERVICE_NAME_LABEL,
    SOURCE_ANNOTATION,
    SOURCE_VERSION_ANNOTATION,
    UDN_SERVICE_NAME_LABEL,
)
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.errors import OvnkError
from ovnk_core.kube.client import JSON

MIRROR_CONTROLLER = "endpointslice-mirror-controller.k8s.ovn.org"

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_DNS1123_SUBDOMAIN_MAX = 253

AddressLookup = Callable[[JSON, bool], str]  # (endpoint targetRef, ipv6) -> address


class EndpointAddressError(OvnkError):
    """A pod endpoint's primary-network address cannot be determined (yet)."""


def managed_by(slice_: JSON) -> str:
    return str((slice_.get("metadata", {}).get("labels") or {}).get(MANAGED_BY_LABEL, ""))


def is_source(slice_: JSON) -> bool:
    """A slice of the default EndpointSlice controller: the only kind that is mirrored."""
    return managed_by(slice_) == DEFAULT_CONTROLLER


def is_mirror(slice_: JSON) -> bool:
    return managed_by(slice_) == MIRROR_CONTROLLER


def source_name_of_mirror(mirror: JSON) -> str:
    return str((mirror.get("metadata", {}).get("annotations") or {}).get(SOURCE_ANNOTATION, ""))


def source_key(slice_: JSON) -> str | None:
    """The ``namespace/name`` of the default slice that ``slice_`` is or mirrors.

    None for slices of any other manager and for mirrors that do not name their source:
    the controller never looks at those.
    """
    meta = slice_.get("metadata", {})
    if is_source(slice_):
        return f"{meta.get('namespace')}/{meta.get('name')}"
    if is_mirror(slice_) and source_name_of_mirror(slice_):
        return f"{meta.get('namespace')}/{source_name_of_mirror(slice_)}"
    return None


def is_valid_generate_name(prefix: str) -> bool:
    """Whether ``prefix`` is a valid ``generateName`` for a DNS-subdomain-named object.

    As the API server checks it: a trailing ``-`` is allowed (the random suffix follows).
    """
    masked = prefix[:-1] + "a" if prefix.endswith("-") else prefix
    return (0 < len(masked) <= _DNS1123_SUBDOMAIN_MAX
            and _DNS1123_SUBDOMAIN.fullmatch(masked) is not None)


def mirror_generate_name(source: JSON, network: str) -> str:
    """``<network>-<source generateName or name>``, or the source's own when that is invalid.

    Upstream's rule: network names of namespaced UDNs contain ``_`` and long names overflow
    253 characters; either way the mirror then borrows the source's prefix unchanged.
    """
    meta = source.get("metadata", {})
    original = str(meta.get("generateName") or meta.get("name") or "")
    prefixed = f"{network}-{original}"
    return prefixed if is_valid_generate_name(prefixed) else original


def _first_of_family(addresses: list[str], ipv6: bool) -> str | None:
    for text in addresses:
        try:
            address = ipaddress.ip_interface(text).ip
        except ValueError:
            continue
        if (address.version == 6) == ipv6:
            return str(address)
    return None


def pod_address(pod: JSON, nad_key: str, ipv6: bool) -> str:
    """The address a mirror publishes for ``pod`` in a slice of one family.

    Host-network pods keep their status IP (they have no UDN address); other pods use the
    first address of the family in their ``k8s.ovn.org/pod-networks`` entry for ``nad_key``.

    :raises EndpointAddressError: the pod has no such address (yet).
    """
    family = "IPv6" if ipv6 else "IPv4"
    if (pod.get("spec") or {}).get("hostNetwork"):
        status = pod.get("status") or {}
        ips = [str(item.get("ip", "")) for item in status.get("podIPs") or []]
        if not ips and status.get("podIP"):
            ips = [str(status["podIP"])]
        found = _first_of_family(ips, ipv6)
        if found is None:
            raise EndpointAddressError(f"host-network pod has no {family} address in its status")
        return found
    raw = (pod.get("metadata", {}).get("annotations") or {}).get(POD_NETWORKS_ANNOTATION)
    try:
        networks = pod_networks.parse(raw)
    except pod_networks.PodAnnotationError as exc:
        raise EndpointAddressError(str(exc)) from None
    entry = networks.get(nad_key)
    if entry is None:
        raise EndpointAddressError(f"{POD_NETWORKS_ANNOTATION} has no entry for {nad_key}")
    found = _first_of_family(list(entry.ip_addresses), ipv6)
    if found is None:
        raise EndpointAddressError(
            f"{POD_NETWORKS_ANNOTATION}[{nad_key}] has no {family} address")
    return found


def build_mirror(source: JSON, existing: JSON | None, network: str,
                 address_of: AddressLookup) -> JSON:
    """The mirror of ``source`` for ``network``, starting from the ``existing`` mirror.

    Fields the mirror controller does not manage (other labels, server metadata) are kept
    from ``existing``.  Endpoints keep their order and everything but their addresses;
    endpoints that are not pods (a selector-less service's manual addresses) are copied
    unchanged.  Neither input is modified; to stay cheap for large slices the result shares
    the endpoints' unchanged nested values (conditions, targetRef, hints) with ``source``,
    so treat it as read-only, as it is when sent to the API server.

    :param address_of: ``address_of(targetRef, ipv6)``, the primary-network address of the
        pod an endpoint points at; its ``EndpointAddressError`` fails the whole build.
    """
    src_meta = source.get("metadata", {})
    mirror: dict[str, Any] = {
        key: value for key, value in (existing or {}).items()
        if key not in ("metadata", "endpoints", "ports")} if existing is not None else {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice"}
    meta = mirror["metadata"] = copy.deepcopy(existing["metadata"]) if existing is not None \
        else {"namespace": src_meta.get("namespace")}
    labels = meta.setdefault("labels", {})
    labels[MANAGED_BY_LABEL] = MIRROR_CONTROLLER
    labels[UDN_SERVICE_NAME_LABEL] = str(
        (src_meta.get("labels") or {}).get(SERVICE_NAME_LABEL, ""))
    annotations = meta.setdefault("annotations", {})
    annotations[SOURCE_ANNOTATION] = str(src_meta.get("name", ""))
    annotations[SOURCE_VERSION_ANNOTATION] = str(src_meta.get("resourceVersion", ""))
    annotations[NETWORK_ANNOTATION] = network
    owners = copy.deepcopy(src_meta.get("ownerReferences") or [])
    if owners:
        meta["ownerReferences"] = owners
    else:
        meta.pop("ownerReferences", None)
    if not meta.get("name"):
        meta["generateName"] = mirror_generate_name(source, network)
    mirror["addressType"] = source.get("addressType")
    mirror["ports"] = copy.deepcopy(source.get("ports") or [])
    ipv6 = source.get("addressType") == "IPv6"
    endpoints = []
    for endpoint in source.get("endpoints") or []:
        target = endpoint.get("targetRef") or {}
        if target.get("kind") == "Pod":
            try:
                address = address_of(target, ipv6)
            except EndpointAddressError as exc:
                raise EndpointAddressError(
                    f"failed to determine the Pod IP of: {target.get('namespace')}/"
                    f"{target.get('name')}: {exc}") from None
            endpoint = {**endpoint, "addresses": [address]}
        endpoints.append(endpoint)
    mirror["endpoints"] = endpoints
    return mirror


def mirrored_content(slice_: JSON) -> tuple[Any, ...]:
    """The parts of a slice that the mirror controller manages, for comparing."""
    meta = slice_.get("metadata", {})
    return (meta.get("labels") or {}, meta.get("annotations") or {},
            meta.get("ownerReferences") or [], slice_.get("addressType"),
            slice_.get("ports") or [], slice_.get("endpoints") or [])


def is_current(mirror: JSON, source: JSON, network: str) -> bool:
    """The mirror already reflects this exact version of the source (nothing to do)."""
    annotations = mirror.get("metadata", {}).get("annotations") or {}
    return (annotations.get(SOURCE_VERSION_ANNOTATION)
            == source.get("metadata", {}).get("resourceVersion")
            and annotations.get(NETWORK_ANNOTATION) == network
            and (mirror.get("metadata", {}).get("ownerReferences") or [])
            == (source.get("metadata", {}).get("ownerReferences") or []))
