"""Configuration: defaults, source priority, TOML, value parsers and consistency checks.

Every test passes ``env=`` explicitly so the real ``os.environ`` never leaks in.
"""

from __future__ import annotations

import dataclasses
import logging
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import pytest

from ovnk_core.config import Config, load_config
from ovnk_core.config import values as V
from ovnk_core.config.options import OPTIONS, OPTIONS_BY_FLAG
from ovnk_core.config.values import ClusterSubnet
from ovnk_core.errors import ConfigError

UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17"}


def load(cli: dict[str, Any] | None = None, env: dict[str, str] | None = None,
         config_file: Path | None = None) -> Config:
    return load_config(cli or {}, env=env or {}, config_file=config_file)


def config_error(cli: dict[str, Any] | None = None, env: dict[str, str] | None = None,
                 config_file: Path | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load(cli, env, config_file)
    return str(info.value)


def write(tmp_path: Path, text: str, name: str = "ovnk.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- defaults

def test_defaults_match_upstream() -> None:
    config = load()
    assert config == Config(
        enable_multi_network=False,
        enable_network_segmentation=False,
        enable_dynamic_udn_allocation=False,
        enable_multi_networkpolicy=False,
        udn_deletion_grace_period=120.0,
        enable_persistent_ips=False,
        enable_preconfigured_udn_addresses=False,
        extra_features=(),
        disabled_features=(),
        topologies=(),
        default_network_topology="layer3",
        udn_allowed_default_services=("default/kubernetes", "kube-system/kube-dns"),
        cluster_subnets=(ClusterSubnet(ip_network("10.244.0.0/16"), 24),),
        service_cidrs=(ip_network("10.96.0.0/16"),),
        v4_masquerade_subnet=ip_network("169.254.169.0/29"),
        v6_masquerade_subnet=ip_network("fd69::/125"),
        v4_join_subnet=ip_network("100.64.0.0/16"),
        v6_join_subnet=ip_network("fd98::/64"),
        v4_transit_subnet=ip_network("100.88.0.0/16"),
        v6_transit_subnet=ip_network("fd97::/64"),
        mtu=1400,
        nb_address=("unix:/var/run/ovn/ovnnb_db.sock",),
        nb_resync_interval=600.0,
        informer_sync_timeout=20.0,
        sb_address=("unix:/var/run/ovn/ovnsb_db.sock",),
        kubeconfig="",
        node_name="",
        kubelet_cgroup_path="",
        metrics_bind_address="",
        loglevel="info",
    )
    assert config.sources == {option.field: "default" for option in OPTIONS}
    # upstream always runs NetworkPolicy
    assert config.enabled_features == ("networkpolicy",)
    assert config.ip_families == frozenset({4})


def test_udn_deletion_grace_period_defaults_to_120_seconds() -> None:
    assert load().udn_deletion_grace_period == 120.0
    assert OPTIONS_BY_FLAG["udn-deletion-grace-period"].default == 120.0


def test_every_option_fills_a_config_field_and_has_an_ovnk_env_var() -> None:
    fields = {f.name for f in dataclasses.fields(Config)} - {"sources"}
    assert {option.field for option in OPTIONS} == fields
    assert OPTIONS_BY_FLAG["enable-multi-network"].env_var == "OVNK_ENABLE_MULTI_NETWORK"
    assert OPTIONS_BY_FLAG["cluster-manager-v4-transit-subnet"].env_var == (
        "OVNK_CLUSTER_MANAGER_V4_TRANSIT_SUBNET")
    # The upstream-style alias points at the same option.
    assert OPTIONS_BY_FLAG["kubeconfig"] is OPTIONS_BY_FLAG["k8s-kubeconfig"]


# --------------------------------------------------------------------------- priority

@pytest.mark.parametrize(
    ("cli", "env", "file_mtu", "expected", "source"),
    [
        ({}, {}, None, 1400, "default"),
        ({}, {}, 1300, 1300, "file"),
        ({}, {"OVNK_MTU": "1350"}, None, 1350, "env"),
        ({}, {"OVNK_MTU": "1350"}, 1300, 1350, "env"),
        ({"mtu": "1450"}, {}, None, 1450, "cli"),
        ({"mtu": "1450"}, {}, 1300, 1450, "cli"),
        ({"mtu": "1450"}, {"OVNK_MTU": "1350"}, None, 1450, "cli"),
        ({"mtu": "1450"}, {"OVNK_MTU": "1350"}, 1300, 1450, "cli"),
    ],
    ids=["default", "file>default", "env>default", "env>file", "cli>default", "cli>file",
         "cli>env", "cli>env>file"],
)
def test_source_priority_is_cli_then_env_then_file(
    tmp_path: Path, cli: dict[str, str], env: dict[str, str], file_mtu: int | None,
    expected: int, source: str,
) -> None:
    path = write(tmp_path, f"mtu = {file_mtu}\n") if file_mtu is not None else None
    config = load(cli, env, path)
    assert config.mtu == expected
    assert config.sources["mtu"] == source


@pytest.mark.parametrize(
    ("cli", "env", "file_text", "expected", "source"),
    [
        ({}, {"OVNK_ENABLE_MULTI_NETWORK": "false"}, "enable-multi-network = true", False,
         "env"),
        ({"enable_multi_network": "false"}, {"OVNK_ENABLE_MULTI_NETWORK": "true"}, "", False,
         "cli"),
        ({"enable_multi_network": "false"}, {}, "enable-multi-network = true", False, "cli"),
        ({}, {}, "enable-multi-network = true", True, "file"),
    ],
    ids=["env-false-beats-file-true", "cli-false-beats-env-true", "cli-false-beats-file-true",
         "file-true"],
)
def test_a_false_value_still_overrides_a_lower_source(
    tmp_path: Path, cli: dict[str, str], env: dict[str, str], file_text: str, expected: bool,
    source: str,
) -> None:
    config = load(cli, env, write(tmp_path, file_text + "\n"))
    assert config.enable_multi_network is expected
    assert config.sources["enable_multi_network"] == source


def test_only_ovnk_prefixed_environment_variables_are_read() -> None:
    config = load(env={"MTU": "9000", "mtu": "9000", "ovnk_mtu": "9000"})
    assert config.mtu == 1400


def test_config_file_is_found_through_cli_config_or_ovnk_config_env(tmp_path: Path) -> None:
    from_cli = write(tmp_path, "mtu = 1300\n", "cli.toml")
    from_env = write(tmp_path, "mtu = 1200\n", "env.toml")
    assert load({"config": str(from_cli)}).mtu == 1300
    assert load(env={"OVNK_CONFIG": str(from_env)}).mtu == 1200
    # --config wins over $OVNK_CONFIG, and the explicit argument wins over both.
    assert load({"config": str(from_cli)}, {"OVNK_CONFIG": str(from_env)}).mtu == 1300
    explicit = write(tmp_path, "mtu = 1100\n", "explicit.toml")
    assert load({"config": str(from_cli)}, config_file=explicit).mtu == 1100


# --------------------------------------------------------------------------- TOML

def test_toml_sections_underscores_lists_and_aliases(tmp_path: Path) -> None:
    path = write(tmp_path, """
[ovnkubernetesfeature]
enable_multi_network = true
enable-network-segmentation = true
udn_deletion_grace_period = "1h30m"

[gateway]
gateway-v4-masquerade-subnet = "169.254.0.0/17"

[default]
mtu = 1500
cluster-subnets = ["10.128.0.0/14/23", "fd01::/48"]
service-cluster-ip-range = "172.30.0.0/16,fd02::/112"
gateway-v6-masquerade-subnet = "fd69::/112"
kubeconfig = "/etc/kube.conf"

[ovnnorth]
nb-address = ["tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641", "tcp:10.0.0.3:6641"]
""")
    config = load(config_file=path)
    assert config.enable_multi_network is True
    assert config.enable_network_segmentation is True
    assert config.udn_deletion_grace_period == 5400.0
    assert config.v4_masquerade_subnet == ip_network("169.254.0.0/17")
    assert config.mtu == 1500
    assert config.cluster_subnets == (ClusterSubnet(ip_network("10.128.0.0/14"), 23),
                                      ClusterSubnet(ip_network("fd01::/48"), 64))
    assert config.service_cidrs == (ip_network("172.30.0.0/16"), ip_network("fd02::/112"))
    assert config.kubeconfig == "/etc/kube.conf"
    assert config.nb_address == ("tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641",
                                 "tcp:10.0.0.3:6641")
    assert config.ip_families == frozenset({4, 6})
    assert config.enabled_features == ("networkpolicy", "isolation", "mirror")
    file_fields = {"enable_multi_network", "enable_network_segmentation",
                   "udn_deletion_grace_period", "v4_masquerade_subnet", "mtu",
                   "cluster_subnets", "service_cidrs", "v6_masquerade_subnet", "kubeconfig",
                   "nb_address"}
    assert {f for f, s in config.sources.items() if s == "file"} == file_fields
    assert {f for f, s in config.sources.items() if s != "file"} == (
        {o.field for o in OPTIONS} - file_fields)


def test_unknown_toml_keys_are_all_reported_with_their_section(tmp_path: Path) -> None:
    # ``service_cidrs`` is the Config field, not a flag name: it is not a key.
    path = write(tmp_path, "service_cidrs = '10.0.0.0/16'\nmtu = 1500\n"
                           "[gateway]\nbogus = 1\nmtu-size = 2\n")
    assert config_error(config_file=path) == (
        f"config file {path}: unknown option(s) gateway.bogus, gateway.mtu-size, "
        "service_cidrs; keys are flag names such as enable-multi-network"
    )


def test_missing_config_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    assert config_error(config_file=path) == f"config file {path} does not exist"
    assert config_error(env={"OVNK_CONFIG": str(path)}) == f"config file {path} does not exist"


def test_invalid_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "mtu = \n")
    message = config_error(config_file=path)
    assert message.startswith(f"config file {path} is not valid TOML: ")
    assert "line 1" in message


def test_unreadable_config_file_is_a_config_error(tmp_path: Path) -> None:
    assert config_error(config_file=tmp_path) == (
        f"config file {tmp_path} cannot be read: Is a directory")


def test_bad_value_in_file_names_the_file_and_the_flag(tmp_path: Path) -> None:
    path = write(tmp_path, 'mtu = "abc"\n')
    assert config_error(config_file=path) == (
        f"invalid configuration: file {path}: invalid value for --mtu: "
        "expected an integer, got 'abc'")


def test_toml_native_types_are_checked_by_the_same_parsers(tmp_path: Path) -> None:
    path = write(tmp_path, "mtu = true\n")
    assert config_error(config_file=path) == (
        f"invalid configuration: file {path}: invalid value for --mtu: "
        "expected an integer, got True")


# --------------------------------------------------------------------------- value parsers

@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("TRUE", True), ("yes", True), (" on ", True), (True, True),
     (1, True), ("0", False), ("false", False), ("No", False), ("off", False), (False, False),
     (0, False)],
    ids=lambda value: repr(value),
)
def test_parse_bool_accepts(raw: Any, expected: bool) -> None:
    assert V.parse_bool(raw) is expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [("maybe", "expected a boolean (true/false), got 'maybe'"),
     ("", "expected a boolean (true/false), got ''"),
     (2, "expected a boolean (true/false), got 2")],
    ids=["word", "empty", "two"],
)
def test_parse_bool_rejects(raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_bool(raw)
    assert str(info.value) == message


@pytest.mark.parametrize(("raw", "expected"), [("1500", 1500), (" 9000 ", 9000), (1400, 1400)],
                         ids=["text", "spaces", "int"])
def test_parse_int_accepts(raw: Any, expected: int) -> None:
    assert V.parse_int(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [("abc", "expected an integer, got 'abc'"), ("1.5", "expected an integer, got '1.5'"),
     ("", "expected an integer, got ''"), (True, "expected an integer, got True")],
    ids=["word", "float", "empty", "bool"],
)
def test_parse_int_rejects(raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_int(raw)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("120s", 120.0), ("2m", 120.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1m30s", 90.0),
     ("1.5h", 5400.0), ("1h0m0.5s", 3600.5), ("0s", 0.0), ("90", 90.0), (" 45s ", 45.0),
     (90, 90.0), (2.5, 2.5)],
    ids=lambda value: repr(value),
)
def test_parse_duration_accepts_go_durations_and_seconds(raw: Any, seconds: float) -> None:
    assert V.parse_duration(raw) == seconds


@pytest.mark.parametrize(
    ("raw", "message"),
    [("-1s", "expected a duration such as 120s, 2m or 1h30m, got '-1s'"),
     ("-1", "a duration cannot be negative, got '-1'"),
     (-5, "a duration cannot be negative, got -5"),
     ("abc", "expected a duration such as 120s, 2m or 1h30m, got 'abc'"),
     ("", "expected a duration such as 120s, 2m or 1h30m, got ''"),
     ("1d", "expected a duration such as 120s, 2m or 1h30m, got '1d'"),
     ("1h 30m", "expected a duration such as 120s, 2m or 1h30m, got '1h 30m'"),
     ("30m1", "expected a duration such as 120s, 2m or 1h30m, got '30m1'"),
     (True, "expected a duration such as 120s or 2m, got True")],
    ids=["negative-unit", "negative-number", "negative-int", "word", "empty", "days",
         "space", "trailing-number", "bool"],
)
def test_parse_duration_rejects(raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_duration(raw)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("10.244.0.0/16/24", [("10.244.0.0/16", 24)]),
     ("10.244.0.0/16", [("10.244.0.0/16", 24)]),
     ("fd00::/48/64", [("fd00::/48", 64)]),
     ("fd00::/48", [("fd00::/48", 64)]),
     ("10.128.0.0/14/23, fd00:10:244::/48/64",
      [("10.128.0.0/14", 23), ("fd00:10:244::/48", 64)]),
     ("10.244.0.0/16/32", [("10.244.0.0/16", 32)]),
     # Host bits are masked off as Go's net.ParseCIDR does (upstream accepts these).
     ("10.244.1.0/16/24", [("10.244.0.0/16", 24)]),
     (["10.1.0.0/16/26", "10.2.0.0/16/26"], [("10.1.0.0/16", 26), ("10.2.0.0/16", 26)])],
    ids=["v4-with-host", "v4-default-host", "v6-with-host", "v6-default-host", "dual-stack",
         "v4-host-32", "host-bits-masked", "toml-list"],
)
def test_parse_cluster_subnets_accepts(raw: Any, expected: list[tuple[str, int]]) -> None:
    assert V.parse_cluster_subnets(raw) == tuple(
        ClusterSubnet(ip_network(cidr), host) for cidr, host in expected)


@pytest.mark.parametrize(
    ("raw", "message"),
    [("fd00::/48/60", "'fd00::/48/60': IPv6 only supports /64 host subnets"),
     ("fd00::/48/72", "'fd00::/48/72': IPv6 only supports /64 host subnets"),
     ("fd00::/64", "'fd00::/64': host prefix /64 must be longer than the CIDR's /64"),
     ("10.244.0.0/16/16", "'10.244.0.0/16/16': host prefix /16 must be longer than the "
                          "CIDR's /16"),
     ("10.244.0.0/16/8", "'10.244.0.0/16/8': host prefix /8 must be longer than the CIDR's /16"),
     ("10.244.0.0/24", "'10.244.0.0/24': host prefix /24 must be longer than the CIDR's /24"),
     ("10.244.0.0/16/33", "'10.244.0.0/16/33': host prefix /33 is longer than 32"),
     ("10.244.0.0/16/x", "'10.244.0.0/16/x': host prefix 'x' is not a number"),
     ("10.244.0.0", "'10.244.0.0' is not of the form CIDR or CIDR/HOSTPREFIX"),
     ("10.244.0.0/16/24/1", "'10.244.0.0/16/24/1' is not of the form CIDR or CIDR/HOSTPREFIX"),
     ("10.244.0.0/33/34",
      "'10.244.0.0/33' is not a valid CIDR ('10.244.0.0/33' does not appear to be an IPv4 "
      "or IPv6 network)"),
     ("10.244.0.0/16/24,10.245.0.0/16/23", "all IPv4 cluster subnets must use the same host "
                                           "prefix")],
    ids=["v6-host-60", "v6-host-72", "v6-host-equals-cidr", "v4-host-equals-cidr",
         "v4-host-shorter", "v4-default-host-not-longer", "v4-host-33", "host-not-number",
         "no-prefix", "too-many-slashes", "bad-cidr", "mixed-v4-host-prefixes"],
)
def test_parse_cluster_subnets_rejects(raw: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_cluster_subnets(raw)
    assert str(info.value) == message


def test_mixed_families_may_use_different_host_prefixes() -> None:
    assert [s.host_prefix for s in V.parse_cluster_subnets("10.1.0.0/16/26,fd00::/48/64")] == [
        26, 64]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("unix:/var/run/ovn/ovnnb_db.sock", ("unix:/var/run/ovn/ovnnb_db.sock",)),
     ("tcp:10.0.0.1:6641", ("tcp:10.0.0.1:6641",)),
     ("ssl:ovn-nb.example.com:6641", ("ssl:ovn-nb.example.com:6641",)),
     ("tcp:[fd00::1]:6641", ("tcp:[fd00::1]:6641",)),
     ("tcp:10.0.0.1:6641,tcp:10.0.0.2:6641,tcp:10.0.0.3:6641",
      ("tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641", "tcp:10.0.0.3:6641")),
     (" ssl:a:6641 , ssl:[fd00::2]:6641 ,", ("ssl:a:6641", "ssl:[fd00::2]:6641")),
     (["tcp:a:1", "tcp:b:2"], ("tcp:a:1", "tcp:b:2"))],
    ids=["unix", "tcp", "ssl-hostname", "tcp-ipv6", "raft-3", "raft-spaces", "toml-list"],
)
def test_parse_ovsdb_remotes_accepts(raw: Any, expected: tuple[str, ...]) -> None:
    assert V.parse_ovsdb_remotes(raw) == expected


@pytest.mark.parametrize(
    ("raw", "bad"),
    [("tcp:10.0.0.1", "tcp:10.0.0.1"),
     ("tcp:fd00::1:6641", "tcp:fd00::1:6641"),
     ("tcp:[fd00::1]", "tcp:[fd00::1]"),
     ("http:host:80", "http:host:80"),
     ("10.0.0.1:6641", "10.0.0.1:6641"),
     ("unix:", "unix:"),
     ("tcp:10.0.0.1:port", "tcp:10.0.0.1:port"),
     ("tcp:10.0.0.1:6641,tcp:10.0.0.2", "tcp:10.0.0.2")],
    ids=["no-port", "unbracketed-ipv6", "ipv6-no-port", "http", "no-scheme", "unix-no-path",
         "port-not-number", "raft-one-bad"],
)
def test_parse_ovsdb_remotes_rejects(raw: str, bad: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_ovsdb_remotes(raw)
    assert str(info.value) == (
        f"{bad!r} is not an OVSDB remote (unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT)")


@pytest.mark.parametrize("raw", ["", " , "], ids=["empty", "only-commas"])
def test_parse_ovsdb_remotes_needs_one_remote(raw: str) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_ovsdb_remotes(raw)
    assert str(info.value) == (
        "expected at least one OVSDB remote such as unix:/run/ovn/ovnnb_db.sock")


def test_flag_cidrs_are_strict_about_host_bits() -> None:
    with pytest.raises(ValueError) as info:
        V.parse_cidr_list("10.96.0.1/16")
    assert str(info.value) == "'10.96.0.1/16' is not a valid CIDR (10.96.0.1/16 has host bits set)"
    assert V.parse_cidr("10.96.0.1/16", strict=False) == ip_network("10.96.0.0/16")


@pytest.mark.parametrize(
    ("cli", "env", "message"),
    [({"enable_multi_network": "maybe"}, {},
      "cli --enable-multi-network: invalid value for --enable-multi-network: "
      "expected a boolean (true/false), got 'maybe'"),
     ({}, {"OVNK_MTU": "big"},
      "env OVNK_MTU: invalid value for --mtu: expected an integer, got 'big'"),
     ({"udn_deletion_grace_period": "-1s"}, {},
      "cli --udn-deletion-grace-period: invalid value for --udn-deletion-grace-period: "
      "expected a duration such as 120s, 2m or 1h30m, got '-1s'"),
     ({}, {"OVNK_UDN_DELETION_GRACE_PERIOD": "abc"},
      "env OVNK_UDN_DELETION_GRACE_PERIOD: invalid value for --udn-deletion-grace-period: "
      "expected a duration such as 120s, 2m or 1h30m, got 'abc'"),
     ({"cluster_subnets": "fd00::/48/60"}, {},
      "cli --cluster-subnets: invalid value for --cluster-subnets: "
      "'fd00::/48/60': IPv6 only supports /64 host subnets"),
     ({}, {"OVNK_NB_ADDRESS": "tcp:10.0.0.1"},
      "env OVNK_NB_ADDRESS: invalid value for --nb-address: "
      "'tcp:10.0.0.1' is not an OVSDB remote (unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT)"),
     ({"v4_masquerade_subnet": "169.254.0.0/33"}, {},
      "cli --gateway-v4-masquerade-subnet: invalid value for --gateway-v4-masquerade-subnet: "
      "'169.254.0.0/33' is not a valid CIDR ('169.254.0.0/33' does not appear to be an IPv4 "
      "or IPv6 network)")],
    ids=["bool", "int-env", "duration-negative", "duration-env", "cluster-subnets",
         "ovsdb-env", "cidr"],
)
def test_parse_error_names_source_and_flag(cli: dict[str, str], env: dict[str, str],
                                           message: str) -> None:
    assert config_error(cli, env) == f"invalid configuration: {message}"


def test_cli_mapping_keys_are_config_fields_not_flag_names() -> None:
    # argparse stores each flag under its Config field (dest); other keys are ignored.
    assert load({"gateway_v4_masquerade_subnet": "x", "command": "config"}) == load()
    assert load({"v4_masquerade_subnet": "169.254.0.0/17"}).sources[
        "v4_masquerade_subnet"] == "cli"


def test_every_parse_error_is_reported_together(tmp_path: Path) -> None:
    path = write(tmp_path, 'nb-address = "bogus"\n')
    message = config_error({"mtu": "abc", "enable_network_segmentation": "true"},
                           {"OVNK_ENABLE_MULTI_NETWORK": "perhaps"}, path)
    # Options table order; consistency checks do not run on unparsable input.
    assert message == (
        "invalid configuration:\n"
        "  env OVNK_ENABLE_MULTI_NETWORK: invalid value for --enable-multi-network: "
        "expected a boolean (true/false), got 'perhaps'\n"
        "  cli --mtu: invalid value for --mtu: expected an integer, got 'abc'\n"
        f"  file {path}: invalid value for --nb-address: 'bogus' is not an OVSDB remote "
        "(unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT)"
    )


# --------------------------------------------------------------------------- consistency

SEGMENTATION_NEEDS_MULTI = (
    "the Network Segmentation feature cannot be enabled without also enabling Multi Network "
    "(--enable-network-segmentation requires --enable-multi-network)")
DYNAMIC_NEEDS_SEGMENTATION = (
    "the Dynamic UDN Allocation feature cannot be enabled without also enabling Network "
    "Segmentation (--enable-dynamic-udn-allocation requires --enable-network-segmentation)")
V4_MASQUERADE_TOO_SMALL = (
    "--gateway-v4-masquerade-subnet 169.254.169.0/29 is too small for network segmentation: "
    "it holds 8 addresses and user-defined networks need 10 reserved plus 2 per network; "
    "use a larger subnet such as 169.254.0.0/17")
V6_MASQUERADE_TOO_SMALL = (
    "--gateway-v6-masquerade-subnet fd69::/125 is too small for network segmentation: "
    "it holds 8 addresses and user-defined networks need 10 reserved plus 2 per network; "
    "use a larger subnet such as fd69::/112")
DUAL = {"cluster_subnets": "10.244.0.0/16/24,fd00:10:244::/48/64",
        "service_cidrs": "10.96.0.0/16,fd00:10:96::/112"}


def overlap(kind_a: str, a: str, flag_a: str, kind_b: str, b: str, flag_b: str) -> str:
    return (f"illegal network configuration: {kind_a} {a} (--{flag_a}) overlaps "
            f"{kind_b} {b} (--{flag_b})")


@pytest.mark.parametrize(
    ("cli", "problems"),
    [
        ({"enable_network_segmentation": "true", "v4_masquerade_subnet": "169.254.0.0/17"},
         [SEGMENTATION_NEEDS_MULTI]),
        ({"enable_multi_network": "true", "enable_dynamic_udn_allocation": "true"},
         [DYNAMIC_NEEDS_SEGMENTATION]),
        ({"enable_dynamic_udn_allocation": "true"}, [DYNAMIC_NEEDS_SEGMENTATION]),
        ({"enable_multi_network": "true", "enable_network_segmentation": "true"},
         [V4_MASQUERADE_TOO_SMALL]),
        ({**UDN, **DUAL}, [V6_MASQUERADE_TOO_SMALL]),
        ({"enable_multi_network": "true", "enable_network_segmentation": "true", **DUAL},
         [V4_MASQUERADE_TOO_SMALL, V6_MASQUERADE_TOO_SMALL]),
        ({"mtu": "575"}, ["--mtu 575 is out of range (576..65536)"]),
        ({"mtu": "65537"}, ["--mtu 65537 is out of range (576..65536)"]),
        ({**DUAL, "mtu": "1279"},
         ["--mtu 1279 is below 1280, the minimum for IPv6 cluster subnets"]),
        ({**DUAL, "mtu": "500"},
         ["--mtu 500 is out of range (576..65536)",
          "--mtu 500 is below 1280, the minimum for IPv6 cluster subnets"]),
        ({"loglevel": "verbose"},
         ["--loglevel 'verbose' is not one of debug, info, warning, error or 0-5"]),
        ({"loglevel": "6"}, ["--loglevel '6' is not one of debug, info, warning, error or 0-5"]),
        ({"cluster_subnets": ""}, ["--cluster-subnets must name at least one subnet"]),
        ({"service_cidrs": ""}, ["--service-cluster-ip-range must name at least one CIDR"]),
        ({"service_cidrs": "fd00:10:96::/112"},
         ["--service-cluster-ip-range must have the same IP families as --cluster-subnets "
          "(services: IPv6, cluster: IPv4)"]),
        ({"service_cidrs": "10.96.0.0/16,fd00:10:96::/112"},
         ["--service-cluster-ip-range must have the same IP families as --cluster-subnets "
          "(services: IPv4, IPv6, cluster: IPv4)"]),
        ({"cluster_subnets": DUAL["cluster_subnets"]},
         ["--service-cluster-ip-range must have the same IP families as --cluster-subnets "
          "(services: IPv4, cluster: IPv4, IPv6)"]),
        ({"service_cidrs": "10.96.0.0/16,10.97.0.0/16"},
         ["--service-cluster-ip-range may name at most one CIDR per IP family"]),
        ({"v4_masquerade_subnet": "fd70::/125"},
         ["--gateway-v4-masquerade-subnet fd70::/125 is not an IPv4 CIDR"]),
        ({"v6_join_subnet": "100.70.0.0/16"},
         ["--gateway-v6-join-subnet 100.70.0.0/16 is not an IPv6 CIDR"]),
        ({"v4_transit_subnet": "fd96::/64"},
         ["--cluster-manager-v4-transit-subnet fd96::/64 is not an IPv4 CIDR"]),
        ({"service_cidrs": "10.244.0.0/16"},
         [overlap("cluster subnet", "10.244.0.0/16", "cluster-subnets",
                  "service subnet", "10.244.0.0/16", "service-cluster-ip-range")]),
        ({"cluster_subnets": "100.64.0.0/16/24"},
         [overlap("cluster subnet", "100.64.0.0/16", "cluster-subnets",
                  "built-in join subnet", "100.64.0.0/16", "gateway-v4-join-subnet")]),
        ({"cluster_subnets": "169.254.0.0/16/24"},
         [overlap("cluster subnet", "169.254.0.0/16", "cluster-subnets",
                  "masquerade subnet", "169.254.169.0/29", "gateway-v4-masquerade-subnet")]),
        ({"cluster_subnets": "100.88.0.0/16/24"},
         [overlap("cluster subnet", "100.88.0.0/16", "cluster-subnets",
                  "transit switch subnet", "100.88.0.0/16",
                  "cluster-manager-v4-transit-subnet")]),
        ({"cluster_subnets": "100.64.0.0/10/24"},
         [overlap("cluster subnet", "100.64.0.0/10", "cluster-subnets",
                  "built-in join subnet", "100.64.0.0/16", "gateway-v4-join-subnet"),
          overlap("cluster subnet", "100.64.0.0/10", "cluster-subnets",
                  "transit switch subnet", "100.88.0.0/16",
                  "cluster-manager-v4-transit-subnet")]),
        ({"cluster_subnets": "10.244.0.0/16/24,10.244.0.0/20/24"},
         [overlap("cluster subnet", "10.244.0.0/16", "cluster-subnets",
                  "cluster subnet", "10.244.0.0/20", "cluster-subnets")]),
        ({"service_cidrs": "100.64.0.0/16"},
         [overlap("service subnet", "100.64.0.0/16", "service-cluster-ip-range",
                  "built-in join subnet", "100.64.0.0/16", "gateway-v4-join-subnet")]),
        ({"v4_masquerade_subnet": "100.88.0.0/29"},
         [overlap("masquerade subnet", "100.88.0.0/29", "gateway-v4-masquerade-subnet",
                  "transit switch subnet", "100.88.0.0/16",
                  "cluster-manager-v4-transit-subnet")]),
        ({"v4_join_subnet": "100.88.0.0/16"},
         [overlap("built-in join subnet", "100.88.0.0/16", "gateway-v4-join-subnet",
                  "transit switch subnet", "100.88.0.0/16",
                  "cluster-manager-v4-transit-subnet")]),
        ({"v4_join_subnet": "169.254.169.0/24"},
         [overlap("built-in join subnet", "169.254.169.0/24", "gateway-v4-join-subnet",
                  "masquerade subnet", "169.254.169.0/29", "gateway-v4-masquerade-subnet")]),
        ({"v6_join_subnet": "fd97::/64"},
         [overlap("built-in join subnet", "fd97::/64", "gateway-v6-join-subnet",
                  "transit switch subnet", "fd97::/64", "cluster-manager-v6-transit-subnet")]),
        ({**DUAL, "cluster_subnets": "10.244.0.0/16/24,fd69::/48/64"},
         [overlap("cluster subnet", "fd69::/48", "cluster-subnets",
                  "masquerade subnet", "fd69::/125", "gateway-v6-masquerade-subnet")]),
    ],
    ids=["segmentation-without-multi-network", "dynamic-without-segmentation",
         "dynamic-alone", "masquerade-29-with-segmentation", "v6-masquerade-125-dual-stack",
         "both-masquerades-too-small", "mtu-too-small",
         "mtu-too-large", "mtu-below-ipv6-minimum", "mtu-both-rules", "loglevel-word",
         "loglevel-6", "no-cluster-subnets", "no-service-cidrs", "service-v6-cluster-v4",
         "service-dual-cluster-v4", "cluster-dual-service-v4", "two-v4-services",
         "v4-masquerade-is-v6", "v6-join-is-v4", "v4-transit-is-v6", "cluster-vs-service",
         "cluster-vs-join", "cluster-vs-masquerade", "cluster-vs-transit",
         "cluster-vs-join-and-transit", "cluster-vs-cluster", "service-vs-join",
         "masquerade-vs-transit", "join-vs-transit", "join-vs-masquerade",
         "v6-join-vs-v6-transit", "v6-cluster-vs-v6-masquerade"],
)
def test_consistency_check_messages(cli: dict[str, str], problems: list[str]) -> None:
    message = config_error(cli)
    if len(problems) == 1:
        assert message == f"inconsistent configuration: {problems[0]}"
    else:
        assert message == "inconsistent configuration:\n  " + "\n  ".join(problems)


def test_dynamic_without_segmentation_uses_upstream_wording() -> None:
    message = config_error({"enable_multi_network": "true",
                            "enable_dynamic_udn_allocation": "true"})
    assert ("the Dynamic UDN Allocation feature cannot be enabled without also enabling "
            "Network Segmentation") in message


@pytest.mark.parametrize(
    "cli",
    [{},
     {"enable_multi_network": "true"},
     UDN,
     {**UDN, "enable_dynamic_udn_allocation": "true"},
     {**UDN, **DUAL, "v6_masquerade_subnet": "fd69::/112"},
     {**DUAL, "mtu": "1280"},
     {"mtu": "576"},
     {"mtu": "65536"},
     {"loglevel": "DEBUG"},
     {"loglevel": "critical"},
     {"loglevel": "5"},
     {"cluster_subnets": "10.128.0.0/14/23", "service_cidrs": "172.30.0.0/16"}],
    ids=["defaults", "multi-network", "segmentation-with-17", "dynamic", "dual-stack-udn",
         "ipv6-mtu-1280", "mtu-576", "mtu-65536", "loglevel-upper", "loglevel-critical",
         "loglevel-klog-5", "openshift-ranges"],
)
def test_consistent_configurations_load(cli: dict[str, str]) -> None:
    load(cli)


def test_small_masquerade_subnet_is_fine_without_segmentation() -> None:
    config = load({"enable_multi_network": "true"})
    assert config.v4_masquerade_subnet == ip_network("169.254.169.0/29")
    assert config.masquerade_network_capacity(4) == 0


def test_masquerade_subnet_with_room_for_few_networks_only_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="ovnk_core.config.validation"):
        config = load({**UDN, "v4_masquerade_subnet": "169.254.0.0/24"})
    assert config.masquerade_network_capacity(4) == 122
    assert [r.getMessage() for r in caplog.records] == [
        "--gateway-v4-masquerade-subnet 169.254.0.0/24 holds masquerade IPs for only 122 "
        "user-defined networks (of 4095); consider 169.254.0.0/17"]


@pytest.mark.parametrize(
    ("subnet", "capacity"),
    [("169.254.169.0/29", 0), ("169.254.0.0/28", 2), ("169.254.0.0/27", 10),
     ("169.254.0.0/24", 122), ("169.254.0.0/17", 4095), ("169.254.0.0/16", 4095)],
    ids=["29", "28", "27", "24", "17", "16"],
)
def test_masquerade_network_capacity(subnet: str, capacity: int) -> None:
    # 10 reserved offsets, then two addresses per network ID, at most 4095 networks.
    config = load({"v4_masquerade_subnet": subnet})
    assert config.masquerade_network_capacity(4) == capacity


def test_several_problems_are_reported_together_in_one_error() -> None:
    message = config_error({"enable_network_segmentation": "true", "mtu": "100",
                            "loglevel": "loud", "service_cidrs": "10.244.0.0/16"})
    assert message == "inconsistent configuration:\n  " + "\n  ".join([
        SEGMENTATION_NEEDS_MULTI,
        "--mtu 100 is out of range (576..65536)",
        "--loglevel 'loud' is not one of debug, info, warning, error or 0-5",
        V4_MASQUERADE_TOO_SMALL,
        overlap("cluster subnet", "10.244.0.0/16", "cluster-subnets",
                "service subnet", "10.244.0.0/16", "service-cluster-ip-range"),
    ])


# --------------------------------------------------------------------------- features

@pytest.mark.parametrize(
    ("cli", "features"),
    [({}, ("networkpolicy",)),
     ({"enable_multi_network": "true"}, ("networkpolicy",)),
     (UDN, ("networkpolicy", "isolation", "mirror")),
     ({**UDN, "enable_dynamic_udn_allocation": "true"},
      ("networkpolicy", "isolation", "mirror", "dynamic")),
     ({"extra_features": "evpn-extras, audit"}, ("networkpolicy", "evpn-extras", "audit")),
     ({**UDN, "extra_features": "mirror,extra,extra"},
      ("networkpolicy", "isolation", "mirror", "extra")),
     ({**UDN, "disabled_features": "mirror"}, ("networkpolicy", "isolation")),
     ({**UDN, "enable_dynamic_udn_allocation": "true", "disabled_features": "isolation,dynamic"},
      ("networkpolicy", "mirror")),
     ({"extra_features": "x,y", "disabled_features": "x"}, ("networkpolicy", "y")),
     ({"disabled_features": "isolation"}, ("networkpolicy",)),
     ({**UDN, "disabled_features": "networkpolicy"}, ("isolation", "mirror")),
     ({"enable_multi_network": "true", "enable_multi_networkpolicy": "true"},
      ("networkpolicy", "multinetworkpolicy"))],
    ids=["defaults", "multi-network-only", "segmentation", "dynamic", "enable-feature",
         "enable-feature-dedup", "disable-mirror", "disable-two", "enable-then-disable",
         "disable-unused", "disable-networkpolicy", "multi-networkpolicy"],
)
def test_enabled_features(cli: dict[str, str], features: tuple[str, ...]) -> None:
    assert load(cli).enabled_features == features


def test_feature_lists_come_from_env_and_file_too(tmp_path: Path) -> None:
    path = write(tmp_path, 'enable-feature = ["audit", "trace"]\n')
    config = load(env={"OVNK_DISABLE_FEATURE": "trace"}, config_file=path)
    assert config.extra_features == ("audit", "trace")
    assert config.disabled_features == ("trace",)
    assert config.enabled_features == ("networkpolicy", "audit")


@pytest.mark.parametrize(
    ("raw", "seconds"), [("2m", 120.0), ("90s", 90.0), ("1h30m", 5400.0), ("30", 30.0)],
    ids=["2m", "90s", "1h30m", "plain-seconds"],
)
def test_udn_deletion_grace_period_from_env(raw: str, seconds: float) -> None:
    config = load(env={"OVNK_UDN_DELETION_GRACE_PERIOD": raw})
    assert config.udn_deletion_grace_period == seconds
    assert config.sources["udn_deletion_grace_period"] == "env"


# ------------------------------------------------------------ allowed default services

@pytest.mark.parametrize("raw,expected", [
    ("default/kubernetes,kube-system/kube-dns", ("default/kubernetes", "kube-system/kube-dns")),
    (" ns/svc, ns1/svc1", ("ns/svc", "ns1/svc1")),
    ("ns/svc.with.dots", ("ns/svc.with.dots",)),
    (["a/b", "a/b"], ("a/b",)),
])
def test_udn_allowed_default_services_accepts(raw: Any, expected: tuple[str, ...]) -> None:
    assert V.parse_udn_allowed_default_services(raw) == expected


@pytest.mark.parametrize("raw,message", [
    ("namespace/invalid.name,test", 'UDN enabled service "test" no namespace set'),
    ("", 'UDN enabled service "" no namespace set'),
    ("a/b,", 'UDN enabled service "" no namespace set'),
    ("/svc", 'UDN enabled service "/svc" no namespace set'),
    ("a/b/c", 'UDN enabled service "a/b/c" no namespace set: unexpected key format: "a/b/c"'),
    ("Bad_NS/svc", 'UDN enabled service "Bad_NS/svc" has an invalid namespace: a lowercase '
                   "RFC 1123 label"),
    ("ns/Bad_Name", 'UDN enabled service "ns/Bad_Name" has an invalid name: a lowercase '
                    "RFC 1123 subdomain"),
    ("ns/", 'UDN enabled service "ns/" has an invalid name'),
])
def test_udn_allowed_default_services_rejects_with_upstream_messages(raw: str, message: str
                                                                     ) -> None:
    with pytest.raises(ValueError) as info:
        V.parse_udn_allowed_default_services(raw)
    assert str(info.value).startswith("UDN allowed services field is invalid: " + message)


def test_udn_allowed_default_services_error_names_the_flag(tmp_path: Path) -> None:
    path = write(tmp_path, 'udn_allowed_default_services = "default/kubernetes,dns"\n')
    message = config_error(config_file=path)
    assert "invalid value for --udn-allowed-default-services: UDN allowed services field is " \
           'invalid: UDN enabled service "dns" no namespace set' in message
    assert load({"udn_allowed_default_services": "ns/a"}).udn_allowed_default_services == \
        ("ns/a",)
