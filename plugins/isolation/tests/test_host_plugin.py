"""The isolation feature claims upstream's nftables table through the node contract:
handed out as its table while enabled, named for removal while installed but disabled."""

from __future__ import annotations

import pytest

from ovnk_core.contexts import feature_table_name
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config

pytestmark = pytest.mark.unit


def test_enabled_isolation_gets_upstreams_table() -> None:
    host = PluginHost.load(udn_config())
    assert host.nft_table("isolation") == "ovn-kubernetes"
    assert host.nft_table("mirror") == feature_table_name("mirror")  # claims none
    assert "isolation" not in host.disabled_feature_tables()


def test_disabled_isolation_names_its_table_for_removal() -> None:
    host = PluginHost.load(udn_config(disabled_features="isolation"))
    assert "isolation" not in host.features
    assert host.disabled_feature_tables()["isolation"] == "ovn-kubernetes"
