"""Rendering a UDN or CUDN into the NetworkAttachmentDefinition upstream would create.

Pure functions only: given the custom resource, the target namespace and the
configuration, build the NAD object — name, namespace, owner reference,
labels, annotations, finalizer and the CNI config JSON with exactly
upstream's keys and defaults.  The CNI config's common keys are rendered
here, the topology's own keys by the ``UdnSection`` of the topology plugin
that owns it (``ovnk_core.udn_section``; the functions that need it take the
loaded ``UdnSections``, by default every installed topology's).
``transit_subnets`` and ``persistent_ips`` are building blocks for those
sections.  The controller compares this with what exists and writes only
differences.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from ovnk_core.config import Config
from ovnk_core.errors import NetworkConfigError, TopologyNotSupported
from ovnk_core.networks import nad_config
from ovnk_core.udn.sections import UdnSections, installed_sections
from ovnk_core.udn_section import PRIMARY, TRANSPORTS

JSON = dict[str, Any]

UDN_KIND = "UserDefinedNetwork"
CUDN_KIND = "ClusterUserDefinedNetwork"
API_VERSION = "k8s.ovn.org/v1"
CNI_VERSION = "1.1.0"
CNI_TYPE = "ovn-k8s-cni-overlay"
CUDN_PREFIX = "cluster_udn_"
NAD_LABEL = "k8s.ovn.org/user-defined-network"
FINALIZER = "k8s.ovn.org/user-defined-network-protection"
OVN_ANNOTATION_PREFIX = "k8s.ovn.org"
DEFAULT_JOIN_SUBNETS = "100.65.0.0/16,fd99::/64"
DEFAULT_TRANSIT = {4: ipaddress.ip_network("100.88.0.0/16"),
                   6: ipaddress.ip_network("fd97::/64")}


def udn_network_name(namespace: str, name: str) -> str:
    return f"{namespace}_{name}"


def cudn_network_name(name: str) -> str:
    return f"{CUDN_PREFIX}{name}"


def network_name_of(obj: JSON) -> str:
    meta = obj["metadata"]
    if obj.get("kind") == CUDN_KIND or "namespace" not in meta:
        return cudn_network_name(meta["name"])
    return udn_network_name(meta["namespace"], meta["name"])


def network_spec_of(obj: JSON) -> JSON:
    """The topology part: ``spec`` of a UDN, ``spec.network`` of a CUDN."""
    spec: JSON = obj.get("spec") or {}
    if obj.get("kind") == CUDN_KIND or "namespace" not in obj["metadata"]:
        network: JSON = spec.get("network") or {}
        return network
    return spec


def topology_config(spec: JSON, sections: UdnSections | None = None) -> JSON:
    """The section of the chosen topology (``spec.<key>``); empty when no loaded section
    owns ``spec.topology``."""
    section = (installed_sections() if sections is None else sections).get(
        spec.get("topology"))
    config: JSON = (spec.get(section.key) if section is not None else None) or {}
    return config


def is_primary(obj: JSON, sections: UdnSections | None = None) -> bool:
    return topology_config(network_spec_of(obj), sections).get("role") == PRIMARY


def transit_subnets(subnets: list[str]) -> str:
    """One transit subnet per family of ``subnets``, moved off any overlapping subnet."""
    nets = [ipaddress.ip_network(s, strict=False) for s in subnets]
    chosen = []
    for version in sorted({n.version for n in nets}):
        candidate = DEFAULT_TRANSIT[version]
        for _ in range(10):
            if not any(n.version == version and n.overlaps(candidate) for n in nets):
                break
            step = candidate.num_addresses
            candidate = ipaddress.ip_network(
                f"{candidate.network_address + step}/{candidate.prefixlen}")
        else:
            raise NetworkConfigError(
                f"failed to find a transit subnet that does not overlap {','.join(subnets)}")
        chosen.append(str(candidate))
    return ",".join(chosen)


def persistent_ips(section: JSON, config: Config) -> bool:
    """Whether a section asks for persistent IPs (``ipam.lifecycle: Persistent``), which
    its NAD says with ``allowPersistentIPs``.

    :raises NetworkConfigError: it does, but ``--enable-persistent-ips`` is off.
    """
    ipam = section.get("ipam") or {}
    if ipam.get("lifecycle") != "Persistent":
        return False
    if not config.enable_persistent_ips:
        raise NetworkConfigError("allowPersistentIPs is set but persistentIPs is Disabled")
    return True


def build_cni_config(obj: JSON, namespace: str, config: Config,
                     sections: UdnSections | None = None) -> JSON:
    """The CNI JSON of the NAD (as a dict with upstream's keys): the common keys, then the
    keys the topology's section renders (``UdnSection.render``).

    :raises TopologyNotSupported: no loaded section owns ``topology``.
    :raises NetworkConfigError: the section cannot be rendered with this configuration.
    """
    sections = installed_sections() if sections is None else sections
    spec = network_spec_of(obj)
    topology = str(spec.get("topology", ""))
    section = sections.get(topology)
    if section is None:
        raise TopologyNotSupported(topology, [s.topology for s in sections])
    topo = topology_config(spec, sections)
    role = str(topo.get("role", "")).lower()
    name = obj["metadata"]["name"]
    cni: JSON = {"cniVersion": CNI_VERSION, "type": CNI_TYPE, "name": network_name_of(obj),
                 "netAttachDefName": f"{namespace}/{name}",
                 "topology": section.netconf_topology, "role": role}
    mtu = topo.get("mtu") or section.default_mtu(config)
    if mtu:
        cni["mtu"] = int(mtu)
    if role == PRIMARY.lower():
        join = topo.get("joinSubnets")
        cni["joinSubnet"] = ",".join(join) if join else DEFAULT_JOIN_SUBNETS
    for key, value in section.render(topo, role, config).items():
        cni.setdefault(key, value)  # the common keys are the core's
    transport = spec.get("transport")
    if transport in TRANSPORTS:
        # Upstream renders "no-overlay"/"evpn" into the netconf; this control plane only
        # renders the Geneve overlay, so it says so instead of rendering an overlay.
        raise NetworkConfigError(f"transport '{transport}' is not supported by this control "
                                 "plane")
    uplinks = (obj.get("spec") or {}).get("uplinks")
    if uplinks:
        raise NetworkConfigError("spec.uplinks is set but the Uplink feature is disabled, "
                                 "ignoring this CUDN")
    return cni


def owner_reference(obj: JSON) -> JSON:
    meta = obj["metadata"]
    kind = CUDN_KIND if obj.get("kind") == CUDN_KIND or "namespace" not in meta else UDN_KIND
    return {"apiVersion": API_VERSION, "kind": kind, "name": meta["name"],
            "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def build_nad(obj: JSON, namespace: str, config: Config,
              sections: UdnSections | None = None) -> JSON:
    """The complete NAD for ``obj`` in ``namespace`` (``sections``: the loaded topologies'
    sections, by default every installed one's).

    :raises NetworkConfigError: the CR cannot be rendered (message for the condition).
    """
    meta = obj["metadata"]
    labels = {**(meta.get("labels") or {}), NAD_LABEL: ""}
    annotations = {key: value for key, value in (meta.get("annotations") or {}).items()
                   if not key.startswith(OVN_ANNOTATION_PREFIX)}
    nad_meta: JSON = {"name": meta["name"], "namespace": namespace, "labels": labels,
                      "ownerReferences": [owner_reference(obj)], "finalizers": [FINALIZER]}
    if annotations:
        nad_meta["annotations"] = annotations
    cni = build_cni_config(obj, namespace, config, sections)
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": nad_meta, "spec": {"config": json.dumps(cni, separators=(",", ":"))}}


def is_controlled_by(nad: JSON, obj: JSON) -> bool:
    uid = obj["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in nad.get("metadata", {}).get("ownerReferences") or [])


def nad_needs_update(existing: JSON, desired: JSON) -> bool:
    """Config, labels and non-ovn annotations, as upstream compares them."""
    def ours(annotations: dict[str, str] | None) -> dict[str, str]:
        return {k: v for k, v in (annotations or {}).items()
                if not k.startswith(OVN_ANNOTATION_PREFIX)}
    old_meta, new_meta = existing.get("metadata") or {}, desired["metadata"]
    old_config = nad_config.config_of(existing)  # None (unreadable): rewrite it
    new_config = json.loads(desired["spec"]["config"])
    return (old_config != new_config or (old_meta.get("labels") or {}) != new_meta["labels"]
            or ours(old_meta.get("annotations")) != ours(new_meta.get("annotations"))
            or FINALIZER not in (old_meta.get("finalizers") or []))


def merge_for_update(existing: JSON, desired: JSON) -> JSON:
    """``desired`` keeping the existing NAD's identity and its k8s.ovn.org annotations."""
    merged: JSON = json.loads(json.dumps(desired))
    old_meta = existing["metadata"]
    keep = {k: v for k, v in (old_meta.get("annotations") or {}).items()
            if k.startswith(OVN_ANNOTATION_PREFIX)}
    annotations = {**merged["metadata"].get("annotations", {}), **keep}
    if annotations:
        merged["metadata"]["annotations"] = annotations
    finalizers = list(old_meta.get("finalizers") or [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    merged["metadata"]["finalizers"] = finalizers
    merged["metadata"]["resourceVersion"] = old_meta.get("resourceVersion")
    merged["metadata"]["uid"] = old_meta.get("uid")
    return merged
