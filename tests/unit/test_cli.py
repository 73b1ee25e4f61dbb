"""The ``ovnk`` command, run in-process through ``ovnk_core.cli.main.main``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_localnet.topology import LocalnetTopology

from ovnk_core.cli import version_cmd
from ovnk_core.cli.main import build_parser, main, split_command
from ovnk_core.config.options import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = {"dynamic": "ovnk.features", "isolation": "ovnk.features", "mirror": "ovnk.features",
           "networkpolicy": "ovnk.features", "layer2": "ovnk.topologies",
           "layer3": "ovnk.topologies", "localnet": "ovnk.topologies"}
UDN_FLAGS = ["--enable-multi-network", "--enable-network-segmentation",
             "--gateway-v4-masquerade-subnet", "169.254.0.0/17"]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OVNK_* variable from the real environment; root logging restored after ``main``."""
    for name in list(os.environ):
        if name.startswith("OVNK_"):
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def version_of(directory: str) -> str:
    with (ROOT / directory / "pyproject.toml").open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


# --------------------------------------------------------------------------- plugins

PLUGIN_COLUMNS = ["NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS"]
NOT_RENDERED = "parses only — its networks are not rendered into OVN"
NOTHING = "contributes nothing in any component"
DEFAULT_OK = "default network topology: layer3: enabled, renders into OVN"


def plugin_table(out: str) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]], str]:
    """``ovnk plugins``'s table: header, cells by name (split on 2+ spaces, the STATUS cell
    has single spaces), the indented lines under each row, and the last line."""
    lines = out.splitlines()
    rows: dict[str, list[str]] = {}
    details: dict[str, list[str]] = {}
    name = ""
    for line in lines[1:]:
        if not line or line.startswith("default network topology:"):
            break
        if line.startswith("  "):
            details[name].append(line.strip())
        else:
            name = line.split()[0]
            rows[name] = re.split(r" {2,}", line)
            details[name] = []
    return lines[0].split(), rows, details, lines[-1]


def test_plugins_table_columns_and_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins")
    assert (code, err) == (0, "")
    header, rows, _details, last = plugin_table(out)
    assert header == PLUGIN_COLUMNS
    status = {"layer3": "enabled", "layer2": "enabled", "localnet": "enabled",
              "networkpolicy": "enabled"}
    for name in BUNDLED:
        assert rows[name] == [name, BUNDLED[name], f"ovnk-{name}",
                              version_of(f"plugins/{name}"), status.get(name, "disabled")]
    assert last == DEFAULT_OK
    # Columns are aligned: every cell starts where its header starts.
    lines = out.splitlines()
    starts = [lines[0].index(title) for title in header]
    for line in lines[1:]:
        if not line or line.startswith((" ", "default network topology:")):
            continue
        cells = re.split(r" {2,}", line)
        assert [line.index(cell, start) for cell, start in zip(cells, starts, strict=True)] == (
            starts)


@pytest.mark.parametrize(
    ("flags", "enabled"),
    [([], {"networkpolicy", "layer2", "layer3", "localnet"}),
     (["--topologies", "layer3"], {"networkpolicy", "layer3"}),
     (UDN_FLAGS, {"networkpolicy", "isolation", "mirror", "layer2", "layer3", "localnet"}),
     ([*UDN_FLAGS, "--enable-dynamic-udn-allocation", "--disable-feature", "mirror",
       "--topologies", "layer2,localnet"],
      {"networkpolicy", "isolation", "dynamic", "layer2", "localnet"}),
     (["--disable-feature", "networkpolicy"], {"layer2", "layer3", "localnet"})],
    ids=["defaults", "topologies", "segmentation", "dynamic-without-mirror",
         "networkpolicy-disabled"],
)
def test_plugins_status_follows_the_flags(capsys: pytest.CaptureFixture[str],
                                          flags: list[str], enabled: set[str]) -> None:
    code, out, _err = run(capsys, "plugins", *flags)
    assert code == 0
    _header, rows, _details, _last = plugin_table(out)
    assert {name for name in BUNDLED if rows[name][-1].startswith("enabled")} == enabled
    assert {name for name in BUNDLED if rows[name][-1] == "disabled"} == set(BUNDLED) - enabled


def test_plugins_show_what_each_contributes_and_never_enabled_for_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins", *UDN_FLAGS, "--enable-dynamic-udn-allocation")
    assert (code, err) == (0, "")
    _header, rows, details, last = plugin_table(out)
    assert {name: rows[name][-1] for name in BUNDLED} == {
        "dynamic": "enabled", "isolation": "enabled",
        "mirror": "enabled", "networkpolicy": "enabled", "layer3": "enabled", "layer2": "enabled",
        "localnet": "enabled"}
    assert {name: details[name] for name in BUNDLED} == {
        "dynamic": ["cluster-manager: controllers, network activity",
                    "zone: network activity"],
        "isolation": ["zone: controllers, pod ports", "node: controllers"],
        "mirror": ["cluster-manager: controllers"],
        "networkpolicy": ["zone: controllers, pod ports, API rights"],
        "layer3": ["topology: parse, routes, render, udn section, services, interconnect"],
        "layer2": ["topology: parse, routes, render, udn section, services, interconnect"],
        "localnet": ["topology: parse, mtu, render, udn section, node check"]}
    # A bare "enabled" is only ever shown for a plugin that contributes and renders.
    for name, row in rows.items():
        if row[-1] == "enabled":
            assert NOTHING not in details[name] and NOT_RENDERED not in details[name]
    assert last == DEFAULT_OK


def test_plugins_lists_an_enabled_plugin_that_is_not_installed(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins", "--enable-feature", "nope")
    assert (code, err) == (0, "")
    _header, rows, details, _last = plugin_table(out)
    assert rows["nope"] == ["nope", "ovnk.features", "-", "-", "not installed"]
    assert details["nope"] == [
        "problem: enabled by the configuration but not installed (no entry point 'nope' in "
        "group 'ovnk.features')"]


@pytest.mark.parametrize(
    ("flags", "problem"),
    [(["--topologies", "layer2"],
      "the default network's topology 'layer3' (--default-network-topology) is not enabled "
      "(--topologies); enabled topologies: layer2"),
     (["--default-network-topology", "evpn"],
      "the default network's topology 'evpn' (--default-network-topology) is not installed; "
      "enabled topologies: layer2, layer3, localnet"),
     (["--default-network-topology", "localnet"],
      "the default network's topology 'localnet' (--default-network-topology) only parses: the "
      "default network is not rendered into OVN and its pods get no network"),
     (["--default-network-topology", "layer2"],
      "the default network's topology 'layer2' (--default-network-topology) renders "
      "user-defined networks only: it cannot render the cluster default network")],
    ids=["not-enabled", "not-installed", "parses-only", "udn-only"],
)
def test_plugins_reports_an_unusable_default_topology_and_check_fails_on_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flags: list[str],
        problem: str) -> None:
    if "only parses" in problem:  # the localnet plugin, rendering switched off, stands in
        monkeypatch.setattr(LocalnetTopology, "renders", False)
    code, out, err = run(capsys, "plugins", *flags)
    assert (code, err) == (0, "")  # listing is a diagnostic
    name = flags[-1] if flags[0] == "--default-network-topology" else "layer3"
    assert out.splitlines()[-1] == f"default network topology: {name}: PROBLEM: {problem}"
    code, out, err = run(capsys, "plugins", "--check", *flags)
    assert code == 2
    assert err == f"ovnk plugins: {problem}\n"
    assert "loaded:" not in out


def test_plugins_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins", "-o", "json", *UDN_FLAGS)
    assert (code, err) == (0, "")
    document = json.loads(out)
    rows = {row["name"]: row for row in document["plugins"]}
    assert rows["layer3"] == {"name": "layer3", "group": "ovnk.topologies",
                              "value": "ovnk_layer3.topology:Layer3Topology",
                              "distribution": "ovnk-layer3",
                              "version": version_of("plugins/layer3"), "enabled": True,
                              "status": "enabled",
                              "contributes": {"topology": ["parse", "routes", "render",
                                                           "udn section", "services",
                                                           "interconnect"]},
                              "contributes_nothing": False, "renders": True, "problems": []}
    assert (rows["mirror"]["status"], rows["mirror"]["contributes"]) == (
        "enabled", {"cluster-manager": ["controllers"]})
    assert (rows["isolation"]["enabled"], rows["isolation"]["status"],
            rows["isolation"]["contributes"], rows["isolation"]["contributes_nothing"]) == (
        True, "enabled", {"zone": ["controllers", "pod ports"], "node": ["controllers"]},
        False)
    assert (rows["layer2"]["status"], rows["layer2"]["renders"]) == ("enabled", True)
    assert (rows["localnet"]["status"], rows["localnet"]["renders"]) == ("enabled", True)
    assert rows["dynamic"]["status"] == "disabled"
    assert set(BUNDLED) <= set(rows)
    assert document["default_network_topology"] == {
        "name": "layer3", "enabled": True, "renders": True, "problem": None}


def test_plugins_check_loads_the_enabled_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins", "--check", *UDN_FLAGS)
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [
        DEFAULT_OK,
        "loaded: topologies=layer2,layer3,localnet features=networkpolicy,isolation,mirror"]


def test_plugins_check_with_too_small_masquerade_subnet_fails_before_listing(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plugins", "--check", "--enable-multi-network",
                         "--enable-network-segmentation")
    assert code == 2
    assert out == ""
    assert err == (
        "ovnk plugins: inconsistent configuration: --gateway-v4-masquerade-subnet "
        "169.254.169.0/29 is too small for network segmentation: it holds 8 addresses and "
        "user-defined networks need 10 reserved plus 2 per network; use a larger subnet such "
        "as 169.254.0.0/17\n")


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--enable-feature", "nope"],
      "ovnk plugins: enabled plugin(s) not installed: nope (no entry point of that name in "
      "group 'ovnk.features'; installed: dynamic, isolation, mirror, multinetworkpolicy, "
      "networkpolicy)\n"),
     (["--enable-feature", "dynamic"],
      "ovnk plugins: plugin ovnk.features:dynamic: feature 'dynamic' requires "
      "--enable-multi-network, --enable-network-segmentation, "
      "--enable-dynamic-udn-allocation\n")],
    ids=["missing-feature", "feature-without-flags"],
)
def test_plugins_check_reports_load_errors(capsys: pytest.CaptureFixture[str],
                                           flags: list[str], message: str) -> None:
    code, out, err = run(capsys, "plugins", "--check", *flags)
    assert code == 2
    assert err == message
    assert out.startswith("NAME")  # the listing itself does not import anything
    assert "loaded:" not in out


def test_plugins_without_check_does_not_load(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "plugins", "--enable-feature", "nope")
    assert code == 0
    assert "loaded:" not in out


# --------------------------------------------------------------------------- config

def config_lines(out: str) -> dict[str, tuple[str, str]]:
    """flag -> (value, source) from ``ovnk config``; an empty value shows as ''."""
    result = {}
    for line in out.splitlines():
        flag, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest.endswith(")") and "(" in rest:
            value, _, source = rest.rpartition("(")
            result[flag] = (value.strip(), source.rstrip(")"))
        else:
            result[flag] = (rest, "")
    return result


def test_config_shows_every_option_with_its_source(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    path = tmp_path / "ovnk.toml"
    path.write_text('[ovnnorth]\nnb-address = ["tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641"]\n'
                    "mtu = 1300\n")
    monkeypatch.setenv("OVNK_MTU", "1500")
    monkeypatch.setenv("OVNK_UDN_DELETION_GRACE_PERIOD", "2m")
    code, out, err = run(capsys, "config", "--config", str(path), *UDN_FLAGS,
                         "--enable-feature", "audit")
    assert (code, err) == (0, "")
    lines = config_lines(out)
    assert list(lines) == [option.flag for option in OPTIONS] + ["features"]
    assert lines["enable-multi-network"] == ("True", "cli")
    assert lines["gateway-v4-masquerade-subnet"] == ("169.254.0.0/17", "cli")
    assert lines["mtu"] == ("1500", "env")
    assert lines["udn-deletion-grace-period"] == ("120.0", "env")
    assert lines["nb-address"] == ("tcp:10.0.0.1:6641,tcp:10.0.0.2:6641", "file")
    assert lines["service-cluster-ip-range"] == ("10.96.0.0/16", "default")
    assert lines["cluster-subnets"] == ("10.244.0.0/16/24", "default")
    assert lines["enable-dynamic-udn-allocation"] == ("False", "default")
    assert lines["topologies"] == ("", "default")
    assert lines["features"] == ("networkpolicy,isolation,mirror,audit", "")


def test_config_file_from_ovnk_config_env(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    path = tmp_path / "ovnk.toml"
    path.write_text("loglevel = 'debug'\n")
    monkeypatch.setenv("OVNK_CONFIG", str(path))
    code, out, _err = run(capsys, "config")
    assert code == 0
    assert config_lines(out)["loglevel"] == ("debug", "file")
    assert config_lines(out)["features"] == ("networkpolicy", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["config", "--mtu", "abc"],
      "ovnk config: invalid configuration: cli --mtu: invalid value for --mtu: expected an "
      "integer, got 'abc'"),
     (["config", "--enable-multi-network", "maybe"],
      "ovnk config: invalid configuration: cli --enable-multi-network: invalid value for "
      "--enable-multi-network: expected a boolean (true/false), got 'maybe'"),
     (["config", "--udn-deletion-grace-period=-1s"],
      "ovnk config: invalid configuration: cli --udn-deletion-grace-period: invalid value "
      "for --udn-deletion-grace-period: expected a duration such as 120s, 2m or 1h30m, "
      "got '-1s'"),
     (["config", "--cluster-subnets", "fd00::/48/60"],
      "ovnk config: invalid configuration: cli --cluster-subnets: invalid value for "
      "--cluster-subnets: 'fd00::/48/60': IPv6 only supports /64 host subnets"),
     (["config", "--nb-address", "tcp:10.0.0.1"],
      "ovnk config: invalid configuration: cli --nb-address: invalid value for --nb-address: "
      "'tcp:10.0.0.1' is not an OVSDB remote (unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT)"),
     (["config", "--loglevel", "bogus"],
      "ovnk config: inconsistent configuration: --loglevel 'bogus' is not one of debug, "
      "info, warning, error or 0-5"),
     (["config", "--enable-network-segmentation"],
      "ovnk config: inconsistent configuration:\n"
      "  the Network Segmentation feature cannot be enabled without also enabling Multi "
      "Network (--enable-network-segmentation requires --enable-multi-network)\n"
      "  --gateway-v4-masquerade-subnet 169.254.169.0/29 is too small for network "
      "segmentation: it holds 8 addresses and user-defined networks need 10 reserved plus 2 "
      "per network; use a larger subnet such as 169.254.0.0/17"),
     (["config", "--config", "/nonexistent/ovnk.toml"],
      "ovnk config: config file /nonexistent/ovnk.toml does not exist"),
     (["plugins", "--mtu", "abc"],
      "ovnk plugins: invalid configuration: cli --mtu: invalid value for --mtu: expected an "
      "integer, got 'abc'"),
     (["cluster-manager", "--mtu", "abc"],
      "ovnk cluster-manager: invalid configuration: cli --mtu: invalid value for --mtu: "
      "expected an integer, got 'abc'")],
    ids=["int", "bool", "negative-duration", "ipv6-host-prefix", "ovsdb-remote", "loglevel",
         "two-problems", "missing-file", "plugins-int", "cluster-manager-int"],
)
def test_invalid_values_exit_2_with_a_message_and_no_traceback(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == message + "\n"
    assert "Traceback" not in err


def test_a_single_problem_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _code, _out, err = run(capsys, "config", "--mtu", "abc")
    assert err.count("\n") == 1
    assert err.startswith("ovnk config: ")


def test_invalid_env_value_is_reported_like_a_flag(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVNK_MTU", "abc")
    code, _out, err = run(capsys, "config")
    assert code == 2
    assert err == ("ovnk config: invalid configuration: env OVNK_MTU: invalid value for "
                   "--mtu: expected an integer, got 'abc'\n")


def test_bool_flags_take_an_optional_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "config", "--enable-multi-network=false",
                          "--enable-persistent-ips")
    assert code == 0
    lines = config_lines(out)
    assert lines["enable-multi-network"] == ("False", "cli")
    assert lines["enable-persistent-ips"] == ("True", "cli")


def test_kubeconfig_alias(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "config", "--kubeconfig", "/etc/kube.conf")
    assert code == 0
    assert config_lines(out)["k8s-kubeconfig"] == ("/etc/kube.conf", "cli")


# --------------------------------------------------------------------------- version and help

def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "version")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"ovnk-core {version_of('.')}"
    assert lines[0] == f"ovnk-core {metadata.version('ovnk-core')}"
    for name in BUNDLED:
        assert lines.count(f"ovnk-{name} {version_of(f'plugins/{name}')}") == 1
    assert lines.count(f"ovnk-local {version_of('local')}") == 1  # ovnk local's distribution
    assert len(lines) == len(set(lines))


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [([], ["plugins", "config", "local", "version"]),
     (["plugins"], ["--check", "--output", "--config", "--enable-multi-network",
                    "--topologies", "--enable-feature", "--disable-feature",
                    "OVNK_ENABLE_MULTI_NETWORK"]),
     (["config"], ["--config", "--cluster-subnets", "--gateway-v4-masquerade-subnet",
                   "--udn-deletion-grace-period", "--k8s-kubeconfig", "--kubeconfig",
                   "--nb-address", "OVNK_CLUSTER_SUBNETS", "OVNK_CONFIG"]),
     (["version"], ["usage: ovnk version"]),
     (["local"], ["up", "status", "restart", "down"]),
     (["cluster-manager"], ["--ready-file", "--config", "--enable-network-segmentation",
                            "OVNK_MTU"]),
     (["controller"], ["--ready-file", "--nb-address", "--k8s-kubeconfig"]),
     (["reachability"], ["--namespace", "--selector", "--protocol", "--port", "--output",
                         "--wait", "--sb-address"]),
     (["show", "network"], ["NAME", "--format", "--nb-address"])],
    ids=["ovnk", "plugins", "config", "version", "local", "cluster-manager", "controller",
         "reachability", "show-network"],
)
def test_help_exits_0_and_mentions_the_flags(capsys: pytest.CaptureFixture[str],
                                             argv: list[str], mentions: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for text in mentions:
        assert text in out, text


def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"plugins", "config", "version", "local", "controller"} <= set(subparsers.choices)
    for name in subparsers.choices:
        with pytest.raises(SystemExit) as info:
            main([name, "--help"])
        assert info.value.code == 0, name
        assert capsys.readouterr().out.startswith(f"usage: ovnk {name}"), name


def test_config_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["config", "--help"])
    out = capsys.readouterr().out
    for option in OPTIONS:
        assert f"--{option.flag}" in out
        assert option.env_var in out


@pytest.mark.parametrize(
    ("argv", "error"),
    [([], "the following arguments are required: COMMAND"),
     (["config", "--bogus"], "unrecognized arguments: --bogus"),
     (["plugins", "-o", "yaml"], "argument -o/--output: invalid choice: 'yaml'"),
     (["frobnicate"], "invalid choice: 'frobnicate'")],
    ids=["no-command", "unknown-flag", "bad-output", "unknown-command"],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                             error: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert error in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "error"),
    [(["reachability", "--output", "matrix.gif"],
      "ovnk reachability: --output matrix.gif: use a .svg or .png file name"),
     (["reachability", "--protocol", "tcp", "--port", "70000"],
      "ovnk reachability: --port 70000 is not a port number"),
     (["reachability", "--gateway-v4-masquerade-subnet", "nonsense"],
      "gateway-v4-masquerade-subnet")],
    ids=["picture-format", "port-range", "bad-config"],
)
def test_reachability_rejects_bad_arguments_before_connecting(
        capsys: pytest.CaptureFixture[str], argv: list[str], error: str) -> None:
    assert main(argv) == 2
    assert error in capsys.readouterr().err


def test_show_network_requires_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["show", "network"])
    assert info.value.code == 2
    assert "the following arguments are required: NAME" in capsys.readouterr().err


# --------------------------------------------------------------------------- cluster access


@pytest.fixture
def no_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No KUBECONFIG, an empty HOME (no ~/.kube/config), not inside a pod."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_reachability_without_a_kubeconfig_says_so(capsys: pytest.CaptureFixture[str],
                                                   no_kubeconfig: Path) -> None:
    code, out, err = run(capsys, "reachability", "-n", "blue")
    assert (code, out) == (2, "")
    assert err == ("ovnk reachability: no kubeconfig: give --kubeconfig FILE or set KUBECONFIG "
                   "(for a local cluster: KUBECONFIG=.ovnk/kubeconfig, which also finds its "
                   "OVN databases)\n")


def test_reachability_with_a_missing_or_broken_kubeconfig(capsys: pytest.CaptureFixture[str],
                                                          no_kubeconfig: Path,
                                                          tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "kubeconfig"
    assert run(capsys, "reachability", "--kubeconfig", str(missing)) == (
        2, "", f"ovnk reachability: kubeconfig {missing} does not exist\n")
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    code, _, err = run(capsys, "reachability", "--kubeconfig", str(broken))
    assert code == 2
    assert err.startswith(f"ovnk reachability: kubeconfig {broken} cannot be used: ")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_kubeconfig_of_a_local_cluster_brings_its_ovn_addresses(
        capsys: pytest.CaptureFixture[str], no_kubeconfig: Path, tmp_path: Path,
        kube_apiserver: ServerHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    """KUBECONFIG=DIR/kubeconfig with DIR/ovnk.toml (as ovnk local writes them): the tool
    reads NB from there; NB is down here, which it says once, after --connect-timeout."""
    from ovnk_local.testing.apiserver_fixtures import client_for

    from ovnk_core.kube.client import KubeClient
    from ovnk_core.kube.resources import NAMESPACES, PODS

    cluster = tmp_path / "cluster"
    cluster.mkdir()
    kubeconfig = kube_apiserver.write_kubeconfig(cluster / "kubeconfig")
    nb = cluster / "ovn" / "nb.sock"
    (cluster / "ovnk.toml").write_text(f'nb-address = "unix:{nb}"\n')
    client = KubeClient(client_for(kube_apiserver))
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    client.create(PODS, {"metadata": {"name": "web", "namespace": "blue"},
                         "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    started = time.monotonic()
    code, out, err = run(capsys, "reachability", "-n", "blue", "--connect-timeout", "0.5")
    assert time.monotonic() - started < 10
    assert (code, out) == (2, "")
    assert err == (f"ovnk reachability: cannot reach OVN Northbound at unix:{nb}: Could not "
                   f"retrieve schema from unix:{nb} (gave up after 0.5s; --connect-timeout "
                   "sets the wait, --nb-address or --config the database)\n")
    # an explicit --config wins over the file next to the kubeconfig
    other = tmp_path / "other.toml"
    other.write_text('nb-address = "unix:/nonexistent/other.sock"\n')
    code, _, err = run(capsys, "reachability", "-n", "blue", "--connect-timeout", "0.2",
                       "--config", str(other))
    assert code == 2 and "unix:/nonexistent/other.sock" in err


def test_show_network_with_northbound_down_says_so_once(capsys: pytest.CaptureFixture[str],
                                                        no_kubeconfig: Path,
                                                        tmp_path: Path) -> None:
    nb = tmp_path / "nb.sock"
    started = time.monotonic()
    code, out, err = run(capsys, "show", "network", "blue/blue-network", "--nb-address",
                         f"unix:{nb}", "--connect-timeout", "1")
    elapsed = time.monotonic() - started
    assert (code, out) == (2, "")
    assert err == (f"ovnk show: cannot reach OVN Northbound at unix:{nb}: Could not retrieve "
                   f"schema from unix:{nb} (gave up after 1s; --connect-timeout sets the wait, "
                   "--nb-address or --config the database)\n")  # one line, no ERROR stream
    assert 1 <= elapsed < 5


def test_the_northbound_wait_defaults_to_5_seconds() -> None:
    parser = build_parser()
    assert parser.parse_args(["show", "network", "x"]).connect_timeout == 5.0
    assert parser.parse_args(["reachability"]).connect_timeout == 5.0


# --------------------------------------------------------------------------- local exec


@pytest.mark.parametrize(("argv", "own", "command"), [
    (["local", "exec", "web", "--", "ip", "--brief", "a"],
     ["local", "exec", "web"], ["ip", "--brief", "a"]),
    (["local", "exec", "web", "-n", "blue", "--", "sh", "-c", "x -- y", "--", "-n"],
     ["local", "exec", "web", "-n", "blue"], ["sh", "-c", "x -- y", "--", "-n"]),
    (["local", "exec", "web", "--"], ["local", "exec", "web"], []),
    (["show", "network", "--", "-odd-name"], ["show", "network", "--", "-odd-name"], None),
], ids=["options-of-the-command", "options-after-pod", "nothing-after", "other-command"])
def test_words_after_dashdash_are_the_command(argv: list[str], own: list[str],
                                              command: list[str] | None) -> None:
    assert split_command(argv, [("local", "exec")]) == (own, command)
    assert split_command(argv) == (argv, None)  # no subcommand takes a command


# --------------------------------------------------------------------------- ovnk.cli


class _EntryPoint:
    """What ``importlib.metadata.entry_points`` yields, for a fake distribution."""

    def __init__(self, name: str, loaded: object) -> None:
        self.name, self.value, self._loaded = name, f"fake_{name}.cli", loaded

    def load(self) -> object:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


def test_subcommands_of_other_distributions_come_from_entry_points(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The core CLI's parser is its own subcommands plus each ``ovnk.cli`` entry point's; a
    subcommand that fails to load is reported and left out, the others still run."""
    from ovnk_core.cli import main as cli_main

    ran: list[tuple[str, list[str]]] = []

    def register(subparsers: Any) -> None:
        parser = subparsers.add_parser("extra", help="a subcommand of another distribution")
        actions = parser.add_subparsers(dest="extra_command", required=True)
        run = actions.add_parser("run")
        run.add_argument("exec_command", nargs="*")
        run.set_defaults(func=lambda args: ran.append(("run", args.exec_command)) or 0)

    extra = SimpleNamespace(register=register, TAKES_A_COMMAND=(("extra", "run"),))
    entries = {"ovnk.cli": [_EntryPoint("extra", extra),
                            _EntryPoint("broken", ImportError("no module named fake_broken")),
                            _EntryPoint("odd", SimpleNamespace())]}
    monkeypatch.setattr(cli_main, "entry_points", lambda group: entries.get(group, []))

    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert "extra" in subparsers.choices and "config" in subparsers.choices
    assert not {"broken", "odd"} & set(subparsers.choices)
    err = capsys.readouterr().err
    assert "subcommand 'broken' (fake_broken.cli, entry point group ovnk.cli) cannot be " \
           "loaded: ImportError: no module named fake_broken" in err
    assert "subcommand 'odd' (fake_odd.cli, entry point group ovnk.cli) has no " \
           "register(subparsers)" in err

    assert main(["extra", "run", "--", "ping", "-c", "1"]) == 0  # its TAKES_A_COMMAND
    assert ran == [("run", ["ping", "-c", "1"])]
    assert main(["version"]) == 0  # the core's own still run


def test_without_other_distributions_the_core_cli_has_its_own_subcommands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ovnk_core.cli import main as cli_main

    monkeypatch.setattr(cli_main, "entry_points", lambda group: [])
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(subparsers.choices) == {
        name.rsplit(".", 1)[-1].removesuffix("_cmd").replace("_", "-")
        for name in cli_main.SUBCOMMANDS}


def test_local_exec_keeps_the_commands_options(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    from ovnk_local.cluster import LocalCluster
    asked: list[tuple[Path, str, str]] = []

    def pod_netns(self: LocalCluster, namespace: str, name: str) -> str:
        asked.append((self.dir, namespace, name))
        return "ovnkabc-n1-pod-blue.web"

    executed: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(LocalCluster, "pod_netns", pod_netns)
    monkeypatch.setattr(os, "execvp", lambda file, args: executed.append((file, args)))
    main(["local", "exec", "web", "-n", "blue", "--dir", str(tmp_path), "--", "ping", "-c",
          "2", "-n", "10.0.0.1"])
    assert asked == [(tmp_path.resolve(), "blue", "web")]
    assert executed == [("ip", ["ip", "netns", "exec", "ovnkabc-n1-pod-blue.web", "ping", "-c",
                                "2", "-n", "10.0.0.1"])]
    assert main(["local", "exec", "web", "--dir", str(tmp_path), "--"]) == 2
    assert capsys.readouterr().err == (
        "ovnk local: exec: give the command to run after --, e.g. ovnk local exec -n default "
        "web -- ip addr\n")


def test_local_exec_on_a_missing_directory_says_there_is_no_cluster(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    assert run(capsys, "local", "exec", "-n", "blue", "web", "--dir", str(missing), "--",
               "ip", "a") == (2, "", f"ovnk local: no local cluster in {missing}; run 'ovnk "
                                     "local up'\n")
    assert not missing.exists()


# ----------------------------------------------------------------- a reader that stops early

@pytest.mark.parametrize("argv", [["plugins"], ["version"], ["config"]],
                         ids=["plugins", "version", "config"])
def test_a_reader_that_closes_early_ends_the_command_quietly(argv: list[str]) -> None:
    """``ovnk plugins | head``: the reader is gone before ovnk writes; no traceback, no
    'Exception ignored' from the interpreter's last flush, exit 1 (Python's code on EPIPE)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    process = subprocess.Popen([sys.executable, "-m", "ovnk_core.cli.main", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader closes before reading anything
    err = process.stderr.read().decode()
    code = process.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err and \
        "Exception ignored" not in err, err
    assert (code, err) == (1, "")


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A BrokenPipeError while standard output is fine (a peer closed a socket the command
    writes to) is a real error: it is raised, not turned into a quiet exit."""
    def broken(_args: argparse.Namespace) -> int:
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(version_cmd, "run", broken)
    with pytest.raises(BrokenPipeError):
        main(["version"])
