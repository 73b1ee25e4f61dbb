"""``ovnk local up --ip-family ipv4|ipv6|dual`` (kind's ``ipFamily``): ovnk local's settings
for the family, checked against what the user gives, and the Nodes it creates (no cluster
is started here)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from ovnk_local.cluster import LocalCluster, build_node, node_gateway_annotations
from ovnk_local.settings import ComponentSettings

from ovnk_core.annotations.node_gateway import (
    GATEWAY_CONFIG_ANNOTATION,
    PRIMARY_IFADDR_ANNOTATION,
    parse,
)
from ovnk_core.cli.main import build_parser
from ovnk_core.errors import ConfigError

pytestmark = pytest.mark.unit


def settings(*words: str) -> ComponentSettings:
    return ComponentSettings.from_args(build_parser().parse_args(["local", "up", *words]))


@pytest.fixture(autouse=True)
def no_ovnk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    for key in [key for key in os.environ if key.startswith("OVNK_")]:
        monkeypatch.delenv(key)


def test_each_family_gets_subnets_of_its_families(tmp_path: Path) -> None:
    owned = LocalCluster(tmp_path).owned_settings()
    assert settings().ip_family == "ipv4"
    v4 = settings().check(owned)
    assert [str(s) for s in v4.cluster_subnets] == ["10.244.0.0/16/24"]
    dual = settings("--ip-family", "dual").check(owned)
    assert [str(s) for s in dual.cluster_subnets] == ["10.244.0.0/16/24", "fd00:10:244::/48/64"]
    assert [str(c) for c in dual.service_cidrs] == ["10.96.0.0/16", "fd00:10:96::/112"]
    # user-defined networks need masquerade addresses of both families
    assert str(dual.v6_masquerade_subnet) == "fd69::/112"
    assert dual.sources["cluster_subnets"] == "ovnk-local"
    v6 = settings("--ip-family", "ipv6").check(owned)
    assert ([str(s) for s in v6.cluster_subnets], [str(c) for c in v6.service_cidrs]) == (
        ["fd00:10:244::/48/64"], ["fd00:10:96::/112"])
    # the components' file says it
    cluster = LocalCluster(tmp_path / ".ovnk")
    cluster.dir.mkdir()
    cluster.write_config(settings("--ip-family", "dual"))
    written = tomllib.loads(cluster.config_file.read_text())
    assert written["cluster-subnets"] == "10.244.0.0/16/24,fd00:10:244::/48/64"
    # subnets the user gives win, when they are of the family's families
    mine = settings("--ip-family", "dual", "--cluster-subnets",
                    "fd00:10:244::/48/64,10.128.0.0/14/23",
                    "--service-cluster-ip-range", "fd00:10:96::/112,10.96.0.0/16").check(owned)
    assert [s.cidr.version for s in mine.cluster_subnets] == [6, 4]


def test_subnets_of_other_families_are_refused(tmp_path: Path) -> None:
    owned = LocalCluster(tmp_path).owned_settings()
    with pytest.raises(ConfigError) as err:
        settings("--ip-family", "dual", "--cluster-subnets", "10.128.0.0/14/23",
                 "--service-cluster-ip-range", "10.96.0.0/16").check(owned)
    assert str(err.value) == (
        "--ip-family dual needs cluster subnets of both IP families, and --cluster-subnets "
        "is 10.128.0.0/14/23; leave it to ovnk local or give subnets (and "
        "--service-cluster-ip-range) of those families")
    with pytest.raises(ConfigError, match="--ip-family ipv4 needs cluster subnets of IPv4 "
                                          "only"):
        settings("--cluster-subnets", "fd00:10:244::/48/64", "--service-cluster-ip-range",
                 "fd00:10:96::/112", "--gateway-v6-masquerade-subnet", "fd69::/112").check(owned)
    # a service range of the other family: the components' own consistency check
    with pytest.raises(ConfigError, match="--service-cluster-ip-range must have the same IP "
                                          "families as --cluster-subnets"):
        settings("--ip-family", "dual", "--service-cluster-ip-range", "10.96.0.0/16").check(
            owned)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["local", "up", "--ip-family", "v6"])


def test_a_dual_stack_node_has_an_address_and_gateway_of_each_family() -> None:
    node = build_node("ovn-worker", 0, (4, 6))
    assert node["status"]["addresses"] == [  # type: ignore[index]
        {"type": "InternalIP", "address": "172.18.0.2"},
        {"type": "InternalIP", "address": "fd80:172:18::2"},
        {"type": "Hostname", "address": "ovn-worker"}]
    annotations = node["metadata"]["annotations"]  # type: ignore[index]
    gateway = parse(annotations[GATEWAY_CONFIG_ANNOTATION])
    assert gateway.ips == ("172.18.0.2/16", "fd80:172:18::2/64")
    assert gateway.next_hops == ("172.18.0.1", "fd80:172:18::1")
    assert gateway.mac == "0a:58:ac:12:00:02"  # the primary address's
    raw = json.loads(annotations[GATEWAY_CONFIG_ANNOTATION])["default"]
    assert "ip-address" not in raw and "next-hop" not in raw  # upstream's: one address only
    assert json.loads(annotations[PRIMARY_IFADDR_ANNOTATION]) == {
        "ipv4": "172.18.0.2/16", "ipv6": "fd80:172:18::2/64"}
    # IPv6 only, and IPv6 first
    v6 = parse(node_gateway_annotations("ovn-worker2", "fd80:172:18::3")[
        GATEWAY_CONFIG_ANNOTATION])
    assert (v6.ips, v6.next_hops) == (("fd80:172:18::3/64",), ("fd80:172:18::1",))
    first = build_node("ovn-worker2", 1, (6, 4))["status"]["addresses"]  # type: ignore[index]
    assert [a["address"] for a in first][:2] == ["fd80:172:18::3", "172.18.0.3"]
