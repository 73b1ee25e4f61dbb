"""Every hook is documented, has a test, and is called the way its spec says."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from ovnk_core import hookimpl, hookspecs
from ovnk_core.config import load_config
from ovnk_core.errors import ConfigError, NetworkConfigError
from ovnk_core.plugins import PluginHost

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("ovnk_"))
UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17"}


def netconf(name: str = "ns1_blue", subnets: str = "10.100.0.0/16/24") -> dict[str, object]:
    return {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": name,
            "netAttachDefName": "ns1/blue", "topology": "layer3", "role": "primary",
            "subnets": subnets}


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_signature(hook: str) -> None:
    spec = getattr(hookspecs, hook)
    doc = inspect.getdoc(spec) or ""
    assert "**When:**" in doc, f"{hook} docstring must say when it fires"
    for parameter in inspect.signature(spec).parameters:
        assert f":param {parameter}:" in doc, f"{hook} must document {parameter}"
    signature = f"## {hook}({', '.join(inspect.signature(spec).parameters)})"
    assert signature in (ROOT / "docs" / "plugins" / "hooks.md").read_text()


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook: str) -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    assert re.search(rf"def test_hook_{hook}\b", sources), f"no test_hook_{hook}"


def test_hook_ovnk_configure() -> None:
    calls: list[object] = []

    class Recorder:
        @hookimpl
        def ovnk_configure(self, config: object) -> None:
            calls.append(config)

    config = load_config({}, env={})
    host = PluginHost.load(config)
    host.manager.register(Recorder())
    host._configure()
    assert calls == [config]

    class Refuser:
        @hookimpl
        def ovnk_configure(self) -> None:  # accepts a subset of the arguments
            raise ConfigError("needs a bigger boat")

    host.manager.register(Refuser(), name="refuser")
    with pytest.raises(ConfigError, match="^plugin refuser: needs a bigger boat$"):
        host._configure()


def test_hook_ovnk_validate_network() -> None:
    seen: list[str] = []

    class Veto:
        @hookimpl
        def ovnk_validate_network(self, netinfo) -> None:  # type: ignore[no-untyped-def]
            seen.append(netinfo.name)
            if netinfo.name == "ns1_red":
                raise NetworkConfigError("red is not allowed here", reason="Vetoed")

    host = PluginHost.load(load_config(UDN, env={}))
    host.manager.register(Veto())
    assert host.parse_netconf(netconf()).name == "ns1_blue"
    with pytest.raises(NetworkConfigError, match="red is not allowed") as caught:
        host.parse_netconf(netconf("ns1_red"))
    assert caught.value.reason == "Vetoed"
    assert seen == ["ns1_blue", "ns1_red"]
    # The core's own check runs through the same hook.
    with pytest.raises(NetworkConfigError, match="overlaps cluster subnet 10.244.0.0/16"):
        host.parse_netconf(netconf(subnets="10.244.0.0/16/24"))


def test_hook_ovnk_network_activity() -> None:
    """The first plugin's answer decides; without one every network is everywhere."""
    from ovnk_core.kube.factory import InformerFactory
    from ovnk_core.networks.activity import EveryNode

    host = PluginHost.load(load_config(UDN, env={}))
    informers = InformerFactory(None)  # type: ignore[arg-type]  # never started here
    assert isinstance(host.network_activity(informers), EveryNode)
    seen: list[object] = []

    class OnlyWorker(EveryNode):
        def is_active(self, network: str, node: str) -> bool:
            return node == "ovn-worker"

    class Filter:
        @hookimpl
        def ovnk_network_activity(self, config: object, informers: object) -> object:
            seen.append((config, informers))
            return OnlyWorker()

    class Refuses:
        @hookimpl
        def ovnk_network_activity(self) -> None:
            raise ConfigError("no")

    host.manager.register(Filter())
    activity = host.network_activity(informers)
    assert seen == [(host.config, informers)]
    assert activity.is_active("n", "ovn-worker") and not activity.is_active("n", "other")
    host.manager.register(Refuses(), name="refuses")
    with pytest.raises(ConfigError, match="^plugin refuses: no$"):
        host.network_activity(informers)
