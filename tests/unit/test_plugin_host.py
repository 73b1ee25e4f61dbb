"""PluginHost: which plugins are found, loaded (imported) and configured, and hook order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ovnk_core import hookimpl
from ovnk_core.config import Config, load_config
from ovnk_core.errors import ConfigError, NetworkConfigError, PluginLoadError
from ovnk_core.feature import Feature
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.plugins import FEATURE_GROUP, TOPOLOGY_GROUP, PluginHost, PluginInfo, discover
from ovnk_core.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17"}
DYNAMIC = {**UDN, "enable_dynamic_udn_allocation": "true"}
# name, group, distribution, plugin directory, entry-point value
BUNDLED = [
    ("dynamic", FEATURE_GROUP, "ovnk-dynamic", "dynamic",
     "ovnk_dynamic.plugin:DynamicAllocationFeature"),
    ("isolation", FEATURE_GROUP, "ovnk-isolation", "isolation",
     "ovnk_isolation.plugin:IsolationFeature"),
    ("mirror", FEATURE_GROUP, "ovnk-mirror", "mirror", "ovnk_mirror.plugin:MirrorFeature"),
    ("multinetworkpolicy", FEATURE_GROUP, "ovnk-networkpolicy", "networkpolicy",
     "ovnk_networkpolicy.plugin:MultiNetworkPolicyFeature"),
    ("networkpolicy", FEATURE_GROUP, "ovnk-networkpolicy", "networkpolicy",
     "ovnk_networkpolicy.plugin:NetworkPolicyFeature"),
    ("layer2", TOPOLOGY_GROUP, "ovnk-layer2", "layer2", "ovnk_layer2.topology:Layer2Topology"),
    ("layer3", TOPOLOGY_GROUP, "ovnk-layer3", "layer3", "ovnk_layer3.topology:Layer3Topology"),
    ("localnet", TOPOLOGY_GROUP, "ovnk-localnet", "localnet",
     "ovnk_localnet.topology:LocalnetTopology"),
]
BUNDLED_DISTS = {row[2] for row in BUNDLED}
L3 = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "ns1_blue",
      "netAttachDefName": "ns1/blue", "topology": "layer3", "role": "primary",
      "subnets": "10.100.0.0/16/24"}


def config(**cli: str) -> Config:
    return load_config(cli, env={})


def host_for(**cli: str) -> PluginHost:
    return PluginHost.load(config(**cli))


def project_version(directory: str) -> str:
    with (ROOT / "plugins" / directory / "pyproject.toml").open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # stevedore's entry-point cache
    return env


LOAD_SCRIPT = """
import json, sys
from ovnk_core.config import load_config
from ovnk_core.plugins import PluginHost, discover
config = load_config(json.loads(sys.argv[1]), env={})
if sys.argv[2] == "load":
    host = PluginHost.load(config)
    loaded = {"topologies": list(host.topologies), "features": list(host.features)}
else:
    loaded = {"discovered": sorted(info.name for info in discover(config) if info.enabled)}
loaded["modules"] = sorted({name.split(".")[0] for name in sys.modules
                            if name.startswith("ovnk_") and not name.startswith("ovnk_core")})
print(json.dumps(loaded))
"""


def run_in_fresh_process(tmp_path: Path, cli: dict[str, str], action: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, json.dumps(cli), action],
        capture_output=True, text=True, timeout=60, env=clean_env(tmp_path), check=False,
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


# --------------------------------------------------------------------------- loading

def test_every_bundled_topology_is_loaded_when_topologies_is_empty() -> None:
    host = host_for()
    assert list(host.topologies) == ["layer2", "layer3", "localnet"]
    assert [type(t).__name__ for t in host.topologies.values()] == [
        "Layer2Topology", "Layer3Topology", "LocalnetTopology"]
    assert all(isinstance(t, Topology) and t.config is host.config
               for t in host.topologies.values())
    # upstream always runs NetworkPolicy: the one feature on by default
    assert list(host.features) == ["networkpolicy"]


@pytest.mark.parametrize(
    ("topologies", "loaded"),
    [("layer3", ["layer3"]), ("layer2,localnet", ["layer2", "localnet"]),
     ("localnet,layer3", ["localnet", "layer3"])],
    ids=["layer3", "layer2-localnet", "order-of-the-flag"],
)
def test_topologies_flag_restricts_the_loaded_topologies(topologies: str,
                                                          loaded: list[str]) -> None:
    assert list(host_for(topologies=topologies).topologies) == loaded


def test_unknown_topology_in_the_flag_is_a_load_error() -> None:
    with pytest.raises(PluginLoadError) as info:
        host_for(topologies="layer3,evpn")
    assert str(info.value) == (
        "enabled plugin(s) not installed: evpn (no entry point of that name in group "
        "'ovnk.topologies'; installed: layer2, layer3, localnet)")


@pytest.mark.parametrize(
    ("cli", "features"),
    [({}, ["networkpolicy"]),
     ({"enable_multi_network": "true"}, ["networkpolicy"]),
     (UDN, ["networkpolicy", "isolation", "mirror"]),
     (DYNAMIC, ["networkpolicy", "isolation", "mirror", "dynamic"]),
     ({**UDN, "disabled_features": "mirror"}, ["networkpolicy", "isolation"]),
     ({**DYNAMIC, "disabled_features": "isolation,mirror,networkpolicy"}, ["dynamic"]),
     ({"disabled_features": "networkpolicy"}, []),
     ({"enable_multi_network": "true", "enable_multi_networkpolicy": "true"},
      ["networkpolicy", "multinetworkpolicy"])],
    ids=["defaults", "multi-network", "segmentation", "dynamic", "mirror-disabled",
         "only-dynamic", "networkpolicy-disabled", "multi-networkpolicy"],
)
def test_features_are_loaded_only_when_enabled(cli: dict[str, str],
                                               features: list[str]) -> None:
    host = host_for(**cli)
    assert list(host.features) == features
    for name, obj in host.features.items():
        assert isinstance(obj, Feature)
        assert obj.name == name
        assert obj.config is host.config


@pytest.mark.parametrize(
    ("cli", "modules"),
    [({"topologies": "layer3"}, ["ovnk_layer3", "ovnk_networkpolicy"]),
     ({"topologies": "localnet", "disabled_features": "networkpolicy"}, ["ovnk_localnet"]),
     ({}, ["ovnk_layer2", "ovnk_layer3", "ovnk_localnet", "ovnk_networkpolicy"]),
     ({**UDN, "topologies": "layer3"},
      ["ovnk_isolation", "ovnk_layer3", "ovnk_mirror", "ovnk_networkpolicy"]),
     ({**DYNAMIC, "topologies": "layer2", "disabled_features": "mirror,networkpolicy"},
      ["ovnk_dynamic", "ovnk_isolation", "ovnk_layer2"])],
    ids=["layer3-only", "localnet-only-networkpolicy-disabled", "all-topologies-default-features",
         "segmentation-features", "dynamic-without-mirror"],
)
def test_only_enabled_plugins_are_imported(tmp_path: Path, cli: dict[str, str],
                                           modules: list[str]) -> None:
    loaded = run_in_fresh_process(tmp_path, cli, "load")
    assert loaded["modules"] == modules


def test_discover_imports_no_plugin(tmp_path: Path) -> None:
    loaded = run_in_fresh_process(tmp_path, DYNAMIC, "discover")
    assert loaded["discovered"] == ["dynamic", "isolation", "layer2", "layer3", "localnet",
                                    "mirror", "networkpolicy"]  # not multinetworkpolicy: off
    assert loaded["modules"] == []


def test_enabled_but_missing_feature_is_a_load_error_naming_it() -> None:
    with pytest.raises(PluginLoadError) as info:
        host_for(extra_features="nope")
    assert str(info.value) == (
        "enabled plugin(s) not installed: nope (no entry point of that name in group "
        "'ovnk.features'; installed: dynamic, isolation, mirror, multinetworkpolicy, "
        "networkpolicy)")


def test_several_missing_features_are_named_together() -> None:
    with pytest.raises(PluginLoadError) as info:
        host_for(**UDN, extra_features="nope,audit")
    assert str(info.value).startswith("enabled plugin(s) not installed: nope, audit ")


@pytest.mark.parametrize(
    ("cli", "message"),
    [({"extra_features": "dynamic"},
      "plugin ovnk.features:dynamic: feature 'dynamic' requires --enable-multi-network, "
      "--enable-network-segmentation, --enable-dynamic-udn-allocation"),
     ({**UDN, "extra_features": "dynamic"},
      "plugin ovnk.features:dynamic: feature 'dynamic' requires "
      "--enable-dynamic-udn-allocation"),
     ({"extra_features": "isolation", "enable_multi_network": "true"},
      "plugin ovnk.features:isolation: feature 'isolation' requires "
      "--enable-network-segmentation"),
     ({"extra_features": "mirror"},
      "plugin ovnk.features:mirror: feature 'mirror' requires --enable-multi-network, "
      "--enable-network-segmentation"),
     ({"enable_multi_networkpolicy": "true"},
      "plugin ovnk.features:multinetworkpolicy: feature 'multinetworkpolicy' requires "
      "--enable-multi-network")],
    ids=["dynamic-without-any-flag", "dynamic-without-its-flag", "isolation-by-name",
         "mirror-by-name", "multi-networkpolicy-without-multi-network"],
)
def test_feature_enabled_by_name_without_its_flags_is_a_config_error(
        cli: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        host_for(**cli)
    assert type(info.value) is ConfigError
    assert str(info.value) == message


def test_features_enabled_by_their_flags_configure_cleanly() -> None:
    host = host_for(**DYNAMIC)
    assert sorted(host.features) == ["dynamic", "isolation", "mirror", "networkpolicy"]


# --------------------------------------------------------------------------- discover

def test_discover_lists_the_eight_bundled_plugins_with_distribution_and_version() -> None:
    infos = [info for info in discover(config()) if info.distribution in BUNDLED_DISTS]
    assert infos == [
        PluginInfo(name=name, group=group, value=value, distribution=dist,
                   version=project_version(directory),
                   enabled=group == TOPOLOGY_GROUP or name == "networkpolicy")
        for name, group, dist, directory, value in BUNDLED
    ]


@pytest.mark.parametrize(
    ("cfg", "enabled"),
    [(None, set()),
     ({}, {"networkpolicy", "layer2", "layer3", "localnet"}),
     ({"topologies": "layer2"}, {"networkpolicy", "layer2"}),
     (UDN, {"networkpolicy", "isolation", "mirror", "layer2", "layer3", "localnet"}),
     ({**DYNAMIC, "topologies": "layer3,localnet", "disabled_features": "isolation"},
      {"networkpolicy", "mirror", "dynamic", "layer3", "localnet"})],
    ids=["no-config", "defaults", "layer2-only", "segmentation", "mixed"],
)
def test_discover_enabled_flags_follow_the_config(cfg: dict[str, str] | None,
                                                  enabled: set[str]) -> None:
    infos = discover(None if cfg is None else config(**cfg))
    assert {i.name for i in infos if i.enabled and i.distribution in BUNDLED_DISTS} == enabled


# --------------------------------------------------------------------------- hooks

def test_inline_validate_network_plugin_is_called_and_can_reject() -> None:
    host = host_for(**UDN)
    calls: list[tuple[str, Config]] = []

    class NoRed:
        @hookimpl
        def ovnk_validate_network(self, netinfo: NetInfo, config: Config) -> None:
            calls.append((netinfo.name, config))
            if netinfo.name.endswith("red"):
                raise NetworkConfigError(f"network {netinfo.name} is vetoed", reason="Vetoed")

    host.manager.register(NoRed(), name="no-red")
    blue = host.parse_netconf(L3)
    assert blue.name == "ns1_blue"
    with pytest.raises(NetworkConfigError) as info:
        host.parse_netconf({**L3, "name": "ns1_red"})
    assert str(info.value) == "network ns1_red is vetoed"
    assert info.value.reason == "Vetoed"
    assert calls == [("ns1_blue", host.config), ("ns1_red", host.config)]
    # The veto concerns one network only.
    assert host.parse_netconf({**L3, "name": "ns1_green"}).name == "ns1_green"


def test_hooks_run_lifo_with_the_core_checks_last() -> None:
    host = host_for(**UDN)
    assert [impl.plugin_name for impl in host.hook.ovnk_validate_network.get_hookimpls()] == [
        "core:network-checks"]
    order: list[str] = []

    def recorder(label: str) -> object:
        class Recorder:
            @hookimpl
            def ovnk_validate_network(self, netinfo: NetInfo) -> None:
                order.append(label)
        return Recorder()

    host.manager.register(recorder("first"), name="first")
    host.manager.register(recorder("second"), name="second")
    # The network overlaps the cluster subnet: the core check (registered first) runs last,
    # after every plugin has been asked.
    with pytest.raises(NetworkConfigError) as info:
        host.parse_netconf({**L3, "subnets": "10.244.0.0/16/24"})
    assert info.value.reason == "SubnetOverlap"
    assert order == ["second", "first"]


def test_configure_runs_the_last_registered_plugin_first() -> None:
    host = host_for(**UDN)
    registered = [impl.plugin_name for impl in host.hook.ovnk_configure.get_hookimpls()]
    assert registered == ["ovnk.features:networkpolicy", "ovnk.features:isolation",
                          "ovnk.features:mirror"]
    # Features are registered after topologies, so a failing later feature is reported first.
    with pytest.raises(ConfigError) as info:
        host_for(extra_features="isolation,mirror")
    assert str(info.value).startswith("plugin ovnk.features:mirror: ")


def test_hosts_are_independent() -> None:
    small = host_for(topologies="layer3")
    full = host_for(**UDN)
    assert list(small.topologies) == ["layer3"]
    assert small.manager is not full.manager
    assert small.topologies["layer3"] is not full.topologies["layer3"]
    assert small.topologies["layer3"].config is small.config
    assert list(full.features) == ["networkpolicy", "isolation", "mirror"]
    assert list(small.features) == ["networkpolicy"]
    assert small.features["networkpolicy"] is not full.features["networkpolicy"]


def test_plugin_manager_lists_every_loaded_plugin_by_group_and_name() -> None:
    host = host_for(**UDN, topologies="layer2")
    names = {name for name, _plugin in host.manager.list_name_plugin()}
    assert names == {"core:network-checks", "ovnk.topologies:layer2",
                     "ovnk.features:networkpolicy", "ovnk.features:isolation",
                     "ovnk.features:mirror"}


def test_a_topology_without_primary_support_never_yields_a_primary_network() -> None:
    """``supports_primary = False`` is enforced by the core, even when the topology's own
    parser lets ``role: primary`` through."""
    from ovnk_core import NetworkConfigError as Rejected
    from ovnk_core import Topology as Base
    from ovnk_core.networks.netinfo import NetInfo as Info

    class SecondaryOnly(Base):
        name = "secondary-only"
        supports_primary = False

        def parse_netconf(self, netconf: Any) -> Info:
            return Info(name=netconf.name, topology=self.name, role=netconf.role, mtu=1400)

    config = load_config({}, env={})
    host = PluginHost.load(config)
    host.topologies["secondary-only"] = SecondaryOnly(config)
    document = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "n",
                "topology": "secondary-only", "netAttachDefName": "ns/n"}
    assert host.parse_netconf({**document, "role": "secondary"}).role == "secondary"
    with pytest.raises(Rejected, match="does not support primary networks"):
        host.parse_netconf({**document, "role": "primary"})
