"""Which IPAMClaim a pod names for one of its networks (persistent IPs).

A pod asks for persistent addresses by naming an ``IPAMClaim`` of its own namespace, as
upstream reads it (``GetPodNADToNetworkMappingWithActiveNetwork``):

* on a secondary network, in the ``ipam-claim-reference`` of that network's selection
  element in ``k8s.v1.cni.cncf.io/networks``;
* on its primary user-defined network, in the ``ipam-claim-reference`` of the element in
  ``v1.multus-cni.io/default-network``, else in the deprecated annotation
  ``k8s.ovn.org/primary-udn-ipamclaim``.

Whether the network honours the reference (its NAD allows persistent IPs, and the
feature is on) is the allocator's question, not this module's.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.pods.network_selections import (
    NetworkSelectionError,
    parse_selections,
    pod_selections,
)

DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"
PRIMARY_UDN_IPAMCLAIM_ANNOTATION = "k8s.ovn.org/primary-udn-ipamclaim"


def _default_network_claim(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    raw = (meta.get("annotations") or {}).get(DEFAULT_NETWORK_ANNOTATION) or ""
    text = raw.strip()
    if text.startswith("{"):  # a single selection element, as Multus also accepts
        text = f"[{text}]"
    try:
        selections = parse_selections(text, str(meta.get("namespace")))
    except ValueError as exc:
        raise NetworkSelectionError(
            f"pod {meta.get('namespace')}/{meta.get('name')}: {DEFAULT_NETWORK_ANNOTATION}: "
            f"{exc}") from None
    return next((s.ipam_claim for s in selections if s.ipam_claim), "")


def claim_reference(pod: dict[str, Any], nad_key: str, primary: bool) -> str:
    """The name of the IPAMClaim the pod names for NAD ``nad_key`` ("" for none).

    :param primary: ``nad_key`` is the pod's primary user-defined network.
    :raises NetworkSelectionError: an annotation that names it cannot be read.
    """
    if primary:
        claim = _default_network_claim(pod)
        if claim:
            return claim
        value = (pod["metadata"].get("annotations") or {}).get(
            PRIMARY_UDN_IPAMCLAIM_ANNOTATION) or ""
        return value if isinstance(value, str) else ""
    return next((s.ipam_claim for s in pod_selections(pod) if s.nad_key == nad_key), "")
