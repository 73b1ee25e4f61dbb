"""A third-party topology, installed like any distribution, works exactly like a bundled one.

Three throwaway distributions are written and pip-installed (no network: no
dependencies, no build isolation) into separate ``--target`` directories, once
per test run (``once_per_run``); every check then runs ``ovnk`` or a short script in a fresh
interpreter with ``PYTHONPATH`` pointing at one or more of those directories:

* ``ovnk-evpn-demo``: topology ``evpn`` reading ``vni`` into ``NetInfo.extra``,
  with an ``ovnk_configure`` hook that records the MTU it saw (and rejects a small one);
* ``ovnk-broken-demo``: a topology and a feature whose module raises ``ImportError``;
* ``ovnk-dup-demo``: a second distribution that also claims ``evpn``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ovnk_core.testing.once_per_run import once_per_run

EVPN_VERSION = "0.3.1"

EVPN_PYPROJECT = f"""
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ovnk-evpn-demo"
version = "{EVPN_VERSION}"
description = "third-party ovnk topology plugin used by the tests"
requires-python = ">=3.11"
dependencies = ["ovnk-core"]

[project.entry-points."ovnk.topologies"]
evpn = "ovnk_evpn_demo.topology:EvpnTopology"

[tool.setuptools.packages.find]
include = ["ovnk_evpn_demo*"]
"""

EVPN_TOPOLOGY = '''
"""An EVPN topology shipped outside ovnk."""

from __future__ import annotations

from ovnk_core import ConfigError, NetworkConfigError, Topology, hookimpl
from ovnk_core.config import Config
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import read_mtu, read_plain_subnets
from ovnk_core.networks.netinfo import NetInfo

CONFIGURED: list[int] = []


class EvpnTopology(Topology):
    name = "evpn"
    supports_primary = False

    @hookimpl
    def ovnk_configure(self, config: Config) -> None:
        if config.mtu < 1300:
            raise ConfigError(f"evpn needs --mtu of at least 1300, got {config.mtu}")
        CONFIGURED.append(config.mtu)

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        vni = netconf.get_int("vni")
        if vni is None:
            raise NetworkConfigError(f"network {netconf.name}: evpn topology requires vni")
        if not 1 <= vni <= 16777215:
            raise NetworkConfigError(f"vni {vni} is out of range (1..16777215)")
        subnets = read_plain_subnets(netconf)
        return NetInfo(
            name=netconf.name, topology=self.name, role=netconf.role,
            mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
            nad_key=netconf.nad_key, extra={"vni": vni, "vtep": netconf.get_str("vtep")},
        )
'''

BROKEN_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ovnk-broken-demo"
version = "0.0.1"
requires-python = ">=3.11"

[project.entry-points."ovnk.topologies"]
broken = "ovnk_broken_demo.plugin:BrokenTopology"

[project.entry-points."ovnk.features"]
broken-feature = "ovnk_broken_demo.plugin:BrokenFeature"

[tool.setuptools.packages.find]
include = ["ovnk_broken_demo*"]
"""

BROKEN_PLUGIN = '''
raise ImportError("ovnk_broken_demo needs libfrobnicate, which is not installed")
'''

DUP_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ovnk-dup-demo"
version = "9.9.9"
requires-python = ">=3.11"

[project.entry-points."ovnk.topologies"]
evpn = "ovnk_dup_demo.topology:OtherEvpnTopology"

[tool.setuptools.packages.find]
include = ["ovnk_dup_demo*"]
"""

DUP_TOPOLOGY = '''
from __future__ import annotations

from ovnk_core import NetworkConfigError, Topology


class OtherEvpnTopology(Topology):
    name = "evpn-dup"

    def parse_netconf(self, netconf):
        raise NetworkConfigError("never used")
'''

PACKAGES = {
    "evpn": ("ovnk_evpn_demo", EVPN_PYPROJECT, {"__init__.py": '"""EVPN demo."""\n',
                                                "topology.py": EVPN_TOPOLOGY}),
    "broken": ("ovnk_broken_demo", BROKEN_PYPROJECT, {"__init__.py": "",
                                                      "plugin.py": BROKEN_PLUGIN}),
    "dup": ("ovnk_dup_demo", DUP_PYPROJECT, {"__init__.py": "", "topology.py": DUP_TOPOLOGY}),
}

BUNDLED = {"dynamic", "isolation", "mirror", "networkpolicy", "layer2", "layer3", "localnet"}
UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17"}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each demo distribution built and installed once per run (every pytest-xdist worker
    uses the same, ``once_per_run``); returns its --target directory."""
    root = once_per_run(tmp_path_factory, "third-party-plugin-sites", _install)
    return {key: root / "site" / key for key in PACKAGES}


def _install(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVNK_", "PIP_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
           "--no-cache-dir"]
    builds = {}
    for key, (module, pyproject, files) in PACKAGES.items():
        source = root / "src" / key
        (source / module).mkdir(parents=True)
        (source / "pyproject.toml").write_text(textwrap.dedent(pyproject))
        for name, text in files.items():
            (source / module / name).write_text(text)
        target = root / "site" / key
        command = [*pip, "--no-build-isolation", "--target", str(target), str(source)]
        builds[key] = (module, target, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    for key, (module, target, process) in builds.items():
        output, _ = process.communicate(timeout=180)
        assert process.returncode == 0, (
            f"pip could not install the {key} demo distribution:\n{output}")
        assert (target / module).is_dir()


def run(sites: dict[str, Path], tmp_path: Path, on_path: list[str],
        args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    env["PYTHONPATH"] = os.pathsep.join(str(sites[key]) for key in on_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # stevedore's entry-point cache
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=60, env=env, check=False)


def ovnk(sites: dict[str, Path], tmp_path: Path, on_path: list[str],
         *args: str) -> subprocess.CompletedProcess[str]:
    return run(sites, tmp_path, on_path, ["-m", "ovnk_core.cli.main", *args])


SCRIPT = """
import json, sys
from ovnk_core.config import load_config
from ovnk_core.errors import NetworkConfigError, OvnkError
from ovnk_core.plugins import PluginHost

result = {}
try:
    host = PluginHost.load(load_config(json.loads(sys.argv[1]), env={}))
except OvnkError as exc:
    result["load_error"] = {"type": type(exc).__name__, "message": str(exc)}
else:
    result["topologies"] = list(host.topologies)
    result["features"] = list(host.features)
    parsed = []
    for doc in json.loads(sys.argv[2]):
        try:
            netinfo = host.parse_netconf(doc)
        except NetworkConfigError as exc:
            parsed.append({"error": type(exc).__name__, "message": str(exc),
                           "reason": exc.reason})
        else:
            parsed.append({"name": netinfo.name, "topology": netinfo.topology,
                           "role": netinfo.role, "mtu": netinfo.mtu,
                           "subnets": [str(s) for s in netinfo.subnets],
                           "nad_key": netinfo.nad_key, "extra": dict(netinfo.extra)})
    result["parsed"] = parsed
    if "ovnk_evpn_demo.topology" in sys.modules:
        result["configured"] = sys.modules["ovnk_evpn_demo.topology"].CONFIGURED
result["modules"] = sorted({m.split(".")[0] for m in sys.modules if m.endswith("_demo")
                            or "_demo." in m})
print(json.dumps(result))
"""


def load(sites: dict[str, Path], tmp_path: Path, on_path: list[str], cli: dict[str, str],
         docs: list[Any] | None = None) -> dict[str, Any]:
    result = run(sites, tmp_path, on_path,
                 ["-c", SCRIPT, json.dumps(cli), json.dumps(docs or [])])
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def evpn_doc(**changes: Any) -> dict[str, Any]:
    doc = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "ns1_evpn",
           "netAttachDefName": "ns1/evpn", "topology": "evpn", "role": "secondary",
           "subnets": "10.200.0.0/24", "vni": 4242, "vtep": "vtep-a"}
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not None}


# --------------------------------------------------------------------------- discovery

def test_plugins_json_lists_the_third_party_topology_next_to_the_bundled_ones(
        sites: dict[str, Path], tmp_path: Path) -> None:
    result = ovnk(sites, tmp_path, ["evpn"], "plugins", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["plugins"]
    evpn = [row for row in rows if row["name"] == "evpn"]
    # It parses (and checks its configuration) but does not render: never a bare "enabled".
    assert evpn == [{"name": "evpn", "group": "ovnk.topologies",
                     "value": "ovnk_evpn_demo.topology:EvpnTopology",
                     "distribution": "ovnk-evpn-demo", "version": EVPN_VERSION,
                     "enabled": True, "status": "enabled, parses only",
                     "contributes": {"every process": ["configuration check"],
                                     "topology": ["parse"]},
                     "contributes_nothing": False, "renders": False, "problems": []}]
    assert {row["name"] for row in rows} >= BUNDLED | {"evpn"}
    assert {row["distribution"] for row in rows if row["name"] in BUNDLED} == {
        f"ovnk-{name}" for name in BUNDLED}


def test_plugins_table_shows_the_distribution_and_version(sites: dict[str, Path],
                                                          tmp_path: Path) -> None:
    result = ovnk(sites, tmp_path, ["evpn"], "plugins", "--topologies", "layer3")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: re.split(r" {2,}", line)
            for line in result.stdout.splitlines()[1:] if line and not line.startswith(" ")}
    assert rows["evpn"] == ["evpn", "ovnk.topologies", "ovnk-evpn-demo", EVPN_VERSION,
                            "disabled"]
    assert rows["layer3"][-1] == "enabled"


# --------------------------------------------------------------------------- loading and parsing

def test_third_party_topology_parses_netconfs_like_a_bundled_one(
        sites: dict[str, Path], tmp_path: Path) -> None:
    docs = [evpn_doc(), evpn_doc(vni=None), evpn_doc(vni=0), evpn_doc(vni="4242"),
            evpn_doc(subnets="10.244.0.0/24"), evpn_doc(mtu=9000, vni=7, vtep=None),
            {**evpn_doc(), "topology": "layer3", "subnets": "10.100.0.0/16/24", "vni": None}]
    result = load(sites, tmp_path, ["evpn"], {}, docs)
    assert result["topologies"] == ["evpn", "layer2", "layer3", "localnet"]
    assert result["features"] == ["networkpolicy"]
    assert result["configured"] == [1400]  # its ovnk_configure hook ran once, with the config
    assert result["parsed"] == [
        {"name": "ns1_evpn", "topology": "evpn", "role": "secondary", "mtu": 1400,
         "subnets": ["10.200.0.0/24/24"], "nad_key": "ns1/evpn",
         "extra": {"vni": 4242, "vtep": "vtep-a"}},
        {"error": "NetworkConfigError", "message": "network ns1_evpn: evpn topology requires vni",
         "reason": "InvalidNetworkConfig"},
        {"error": "NetworkConfigError", "message": "vni 0 is out of range (1..16777215)",
         "reason": "InvalidNetworkConfig"},
        {"error": "NetworkConfigError", "message": "netconf 'vni' must be an integer, got '4242'",
         "reason": "InvalidNetworkConfig"},
        # The core's checks apply to third-party networks too.
        {"error": "NetworkConfigError",
         "message": "pod or join subnet overlaps with already configured internal subnets: "
                    "user defined subnet 10.244.0.0/24 overlaps cluster subnet 10.244.0.0/16",
         "reason": "SubnetOverlap"},
        {"name": "ns1_evpn", "topology": "evpn", "role": "secondary", "mtu": 9000,
         "subnets": ["10.200.0.0/24/24"], "nad_key": "ns1/evpn",
         "extra": {"vni": 7, "vtep": ""}},
        # A bundled topology in the same host is unaffected by the errors above.
        {"name": "ns1_evpn", "topology": "layer3", "role": "secondary", "mtu": 1400,
         "subnets": ["10.100.0.0/16/24"], "nad_key": "ns1/evpn", "extra": {}},
    ]


def test_topologies_flag_can_name_the_third_party_topology(sites: dict[str, Path],
                                                          tmp_path: Path) -> None:
    result = load(sites, tmp_path, ["evpn"], {**UDN, "topologies": "layer3,evpn"},
                  [evpn_doc(), {**evpn_doc(), "topology": "layer2"}])
    assert result["topologies"] == ["layer3", "evpn"]
    assert result["features"] == ["networkpolicy", "isolation", "mirror"]
    assert result["parsed"][0]["extra"] == {"vni": 4242, "vtep": "vtep-a"}
    assert result["parsed"][1] == {
        "error": "TopologyNotSupported", "reason": "TopologyNotSupported",
        "message": "topology 'layer2' is not supported: no enabled topology plugin provides it "
                   "(available: evpn, layer3)"}


def test_third_party_topology_left_out_is_not_imported(sites: dict[str, Path],
                                                       tmp_path: Path) -> None:
    result = load(sites, tmp_path, ["evpn"], {"topologies": "layer3"}, [evpn_doc()])
    assert result["topologies"] == ["layer3"]
    assert result["modules"] == []
    assert result["parsed"][0]["reason"] == "TopologyNotSupported"


def test_third_party_configure_hook_can_reject_the_configuration(sites: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    result = load(sites, tmp_path, ["evpn"], {"mtu": "1000"})
    assert result["load_error"] == {
        "type": "ConfigError",
        "message": "plugin ovnk.topologies:evpn: evpn needs --mtu of at least 1300, got 1000"}
    cli = ovnk(sites, tmp_path, ["evpn"], "plugins", "--check", "--mtu", "1000")
    assert cli.returncode == 2
    assert cli.stderr == (
        "ovnk plugins: plugin ovnk.topologies:evpn: evpn needs --mtu of at least 1300, "
        "got 1000\n")


def test_plugins_check_loads_the_third_party_topology(sites: dict[str, Path],
                                                      tmp_path: Path) -> None:
    result = ovnk(sites, tmp_path, ["evpn"], "plugins", "--check", "--topologies",
                  "layer3,evpn")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "loaded: topologies=layer3,evpn features=networkpolicy"


# --------------------------------------------------------------------------- broken and ambiguous

BROKEN_TOPOLOGY = (
    "plugin(s) in group 'ovnk.topologies' failed to load: broken = "
    "ovnk_broken_demo.plugin:BrokenTopology: ImportError: ovnk_broken_demo needs "
    "libfrobnicate, which is not installed")
BROKEN_FEATURE = (
    "plugin(s) in group 'ovnk.features' failed to load: broken-feature = "
    "ovnk_broken_demo.plugin:BrokenFeature: ImportError: ovnk_broken_demo needs "
    "libfrobnicate, which is not installed")


@pytest.mark.parametrize(
    ("cli", "message"),
    [({}, BROKEN_TOPOLOGY),
     ({"topologies": "layer3,broken"}, BROKEN_TOPOLOGY),
     ({"topologies": "layer3", "extra_features": "broken-feature"}, BROKEN_FEATURE)],
    ids=["all-topologies", "named-topology", "named-feature"],
)
def test_broken_plugin_fails_the_load_naming_its_entry_point(
        sites: dict[str, Path], tmp_path: Path, cli: dict[str, str], message: str) -> None:
    result = load(sites, tmp_path, ["broken"], cli)
    assert result["load_error"] == {"type": "PluginLoadError", "message": message}


def test_broken_plugin_that_is_not_enabled_is_never_imported(sites: dict[str, Path],
                                                             tmp_path: Path) -> None:
    result = load(sites, tmp_path, ["broken"], {**UDN, "topologies": "layer3"})
    assert "load_error" not in result
    assert result["topologies"] == ["layer3"]
    assert result["features"] == ["networkpolicy", "isolation", "mirror"]
    assert result["modules"] == []


def test_broken_plugin_is_listed_and_reported_by_plugins_check(sites: dict[str, Path],
                                                               tmp_path: Path) -> None:
    listing = ovnk(sites, tmp_path, ["broken"], "plugins", "-o", "json")
    assert listing.returncode == 0, listing.stderr
    broken = {row["name"]: row for row in json.loads(listing.stdout)["plugins"]
              if row["distribution"] == "ovnk-broken-demo"}
    assert {name: (row["group"], row["enabled"], row["status"])
            for name, row in broken.items()} == {
        "broken": ("ovnk.topologies", True, "enabled, fails to load"),
        "broken-feature": ("ovnk.features", False, "disabled, fails to load")}
    assert broken["broken"]["problems"] == [
        "ovnk_broken_demo.plugin:BrokenTopology fails to import: ImportError: "
        "ovnk_broken_demo needs libfrobnicate, which is not installed"]
    check = ovnk(sites, tmp_path, ["broken"], "plugins", "--check")
    assert check.returncode == 2
    assert check.stderr == f"ovnk plugins: {BROKEN_TOPOLOGY}\n"
    assert "Traceback" not in check.stderr


def test_one_name_from_two_distributions_is_a_load_error(sites: dict[str, Path],
                                                         tmp_path: Path) -> None:
    message = ("plugin 'evpn' (ovnk.topologies) is provided by several distributions: "
               "ovnk-dup-demo, ovnk-evpn-demo; uninstall all but one")
    for cli in ({}, {"topologies": "evpn"}):
        result = load(sites, tmp_path, ["evpn", "dup"], cli)
        assert result["load_error"] == {"type": "PluginLoadError", "message": message}
        assert result["modules"] == []
    # Not wanted, not a problem.
    assert load(sites, tmp_path, ["evpn", "dup"], {"topologies": "layer3"})["topologies"] == [
        "layer3"]
    listing = ovnk(sites, tmp_path, ["evpn", "dup"], "plugins", "-o", "json")
    evpn = [row for row in json.loads(listing.stdout)["plugins"] if row["name"] == "evpn"]
    assert sorted(row["distribution"] for row in evpn) == ["ovnk-dup-demo", "ovnk-evpn-demo"]
    assert all("'evpn' is provided by several distributions; uninstall all but one (startup "
               "refuses it)" in row["problems"] for row in evpn)


def test_topology_name_must_match_its_entry_point(sites: dict[str, Path],
                                                  tmp_path: Path) -> None:
    result = load(sites, tmp_path, ["dup"], {"topologies": "evpn"})
    assert result["load_error"] == {
        "type": "PluginLoadError",
        "message": "topology plugin 'evpn' (ovnk.topologies) declares name 'evpn-dup'; the "
                   "entry-point name and Topology.name must be equal"}
