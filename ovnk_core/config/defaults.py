"""The bundled plugins the default configuration names — the only place the core does.

Upstream always runs NetworkPolicy, on the default network and every network (it has no
flag to turn it off): that feature plugin is on by default, and ``--disable-feature``
turns it off as it turns off any other.  Upstream switches UDN isolation and the
EndpointSlice mirror with ``--enable-network-segmentation``, dynamic allocation with
``--enable-dynamic-udn-allocation`` and MultiNetworkPolicy with
``--enable-multi-networkpolicy``; those flags enable the feature plugins listed here.  The
default network is rendered by the topology named by ``--default-network-topology``.
Nothing else in ``ovnk_core`` may name a bundled plugin
(``tests/unit/test_core_names_no_plugin.py`` checks it).
"""

from __future__ import annotations

DEFAULT_FEATURES = ("networkpolicy",)
"""Feature plugins on unless ``--disable-feature`` names them, listed first."""

SEGMENTATION_FEATURES = ("isolation", "mirror")
"""Feature plugins ``--enable-network-segmentation`` enables."""

DYNAMIC_ALLOCATION_FEATURES = ("dynamic",)
"""Feature plugins ``--enable-dynamic-udn-allocation`` enables."""

MULTI_NETWORK_POLICY_FEATURES = ("multinetworkpolicy",)
"""Feature plugins ``--enable-multi-networkpolicy`` enables (MultiNetworkPolicy on secondary
networks)."""

FEATURES_BY_FLAG: dict[str, tuple[str, ...]] = {
    "enable_network_segmentation": SEGMENTATION_FEATURES,
    "enable_dynamic_udn_allocation": DYNAMIC_ALLOCATION_FEATURES,
    "enable_multi_networkpolicy": MULTI_NETWORK_POLICY_FEATURES,
}
"""Upstream's feature flags (as ``Config`` fields) and the feature plugins each enables, in
the order ``Config.enabled_features`` lists them."""

DEFAULT_NETWORK_TOPOLOGY = "layer3"
"""The topology that renders the cluster default network unless configured otherwise."""

BUNDLED_TOPOLOGIES = ("layer2", "layer3", "localnet")
"""The topology plugins that ship with ovnk: the checked-in CRD files
(``ovnk_core/manifests/crds/``) are built from their UDN sections alone, whatever else is
installed."""
