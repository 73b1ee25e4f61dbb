"""Host side of UDN isolation, pure parts: the kubelet cgroup lookup, the table and its
listing, each pod's elements, and reference counts for IPs two pods hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ovnk_isolation import host_rules
from ovnk_isolation.host_elements import ElementRefs, build_pod_elements
from ovnk_isolation.kubelet_cgroup import (
    KubeletCgroup,
    KubeletCgroupMissing,
    find_kubelet_cgroup,
    walk_for_unit,
)

from ovnk_core.node.nft import build_table_script

pytestmark = pytest.mark.unit

KUBELET = KubeletCgroup("kubelet.slice/kubelet.service", 2)

UPSTREAM_RULES = [  # upstream's getExpectedDump, in its order
    "ip daddr . meta l4proto . th dport @udn-open-ports-v4 accept",
    "ip daddr @udn-open-ports-icmp-v4 meta l4proto icmp accept",
    'socket cgroupv2 level 2 "kubelet.slice/kubelet.service" ip daddr @udn-pod-default-ips-v4 '
    "accept",
    "ip daddr @udn-pod-default-ips-v4 drop",
    "ip6 daddr . meta l4proto . th dport @udn-open-ports-v6 accept",
    "ip6 daddr @udn-open-ports-icmp-v6 meta l4proto icmpv6 accept",
    'socket cgroupv2 level 2 "kubelet.slice/kubelet.service" ip6 daddr @udn-pod-default-ips-v6 '
    "accept",
    "ip6 daddr @udn-pod-default-ips-v6 drop",
]


def cgroup2_root(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text("cpu memory\n")
    return path


# -- kubelet cgroup ------------------------------------------------------------------------
def test_kubelet_cgroup_found_by_walk_on_a_hybrid_mount(tmp_path: Path) -> None:
    mount = cgroup2_root(tmp_path / "unified")
    (mount / "system.slice" / "other.service").mkdir(parents=True)
    (mount / "kubelet.slice" / "kubelet.service").mkdir(parents=True)
    (mount / "system.slice" / "kubelet.service").mkdir(parents=True)
    assert walk_for_unit(mount) == mount / "kubelet.slice" / "kubelet.service"  # lexical
    assert find_kubelet_cgroup("", mount, nft_root=tmp_path) == KubeletCgroup(
        "unified/kubelet.slice/kubelet.service", 2)
    # pure v2: the mount is the nft root, no prefix
    assert find_kubelet_cgroup("", mount, nft_root=mount) == KUBELET


def test_kubelet_cgroup_configured(tmp_path: Path) -> None:
    mount = cgroup2_root(tmp_path / "unified")
    (mount / "ovnk-local" / "c1" / "n1" / "kubelet").mkdir(parents=True)
    assert find_kubelet_cgroup("ovnk-local/c1/n1/kubelet", mount, nft_root=tmp_path) == \
        KubeletCgroup("unified/ovnk-local/c1/n1/kubelet", 4)
    missing = find_kubelet_cgroup("ovnk-local/c1/n2/kubelet", mount, nft_root=tmp_path)
    assert isinstance(missing, KubeletCgroupMissing) and not missing.cgroup_v1
    assert "--kubelet-cgroup-path" in missing.reason
    assert missing.message("n2").startswith(
        "Kubelet probes for UDN are not supported on the node n2: the kubelet cgroup ")


def test_no_cgroup_v2_is_upstreams_cgroup_v1_message(tmp_path: Path) -> None:
    for mount in (None, tmp_path):  # nothing mounted; a directory that is no v2 root
        missing = find_kubelet_cgroup("", mount)
        assert isinstance(missing, KubeletCgroupMissing) and missing.cgroup_v1
        assert missing.message("ovn-worker") == (
            "Kubelet probes for UDN are not supported on the node ovn-worker as it uses "
            "cgroup v1.")


def test_kubelet_not_found_and_mount_outside_the_nft_root(tmp_path: Path) -> None:
    mount = cgroup2_root(tmp_path / "v2")
    missing = find_kubelet_cgroup("", mount, nft_root=tmp_path)
    assert isinstance(missing, KubeletCgroupMissing) and not missing.cgroup_v1
    assert missing.reason == f"no kubelet.service cgroup found under {mount}"
    (mount / "kubelet.service").mkdir()
    outside = find_kubelet_cgroup("", mount, nft_root=tmp_path / "elsewhere")
    assert isinstance(outside, KubeletCgroupMissing) and "outside" in outside.reason


# -- the table -----------------------------------------------------------------------------
def test_rules_in_upstreams_order() -> None:
    assert host_rules.build_rules(KUBELET, {4, 6}) == UPSTREAM_RULES
    without_kubelet = [r for r in UPSTREAM_RULES if not r.startswith("socket")]
    assert host_rules.build_rules(None, {4, 6}) == without_kubelet
    assert host_rules.build_rules(KUBELET, {4}) == UPSTREAM_RULES[:4]


def test_table_script_names_types_comments() -> None:
    table = host_rules.build_table("ovn-kubernetes", KUBELET, {4, 6},
                                   {host_rules.POD_IPS_V4: {"10.0.0.2", "10.0.0.1"}})
    script = build_table_script(table)
    assert script.startswith("add table inet ovn-kubernetes\n"
                             "delete table inet ovn-kubernetes\n")
    assert ('\tchain udn-isolation {\n\t\tcomment "Host isolation for user defined networks";'
            "\n\t\ttype filter hook output priority filter;\n\t}\n") in script
    assert ('\tset udn-pod-default-ips-v4 {\n\t\ttype ipv4_addr;\n\t\tcomment "default network '
            'IPs of pods in user defined networks (IPv4)";\n\t\telements = { 10.0.0.1, '
            "10.0.0.2 };\n\t}\n") in script
    assert [s.name for s in table.sets] == [
        "udn-open-ports-v4", "udn-open-ports-v6", "udn-open-ports-icmp-v4",
        "udn-open-ports-icmp-v6", "udn-pod-default-ips-v4", "udn-pod-default-ips-v6"]
    assert [r.rule for r in table.rules] == UPSTREAM_RULES


def test_listing_is_what_nft_prints() -> None:
    listing = host_rules.build_listing("ovn-kubernetes", None, {4, 6})
    assert listing.startswith("table inet ovn-kubernetes {\n\tset udn-open-ports-v4 {\n"
                              "\t\ttype ipv4_addr . inet_proto . inet_service\n")
    assert "meta l4proto ipv6-icmp accept" in listing and "icmpv6" not in listing
    assert "socket" not in listing


# -- a pod's elements ----------------------------------------------------------------------
def pod(ips: tuple[str, ...] = ("10.244.1.5",), role: str = "infrastructure-locked",
        open_ports: str | None = None, host_network: bool = False,
        status: bool = True) -> dict[str, Any]:
    entry = {"ip_addresses": [f"{ip}/24" if ":" not in ip else f"{ip}/64" for ip in ips],
             "mac_address": "0a:58:0a:f4:01:05", "role": role}
    annotations = {"k8s.ovn.org/pod-networks": json.dumps({"default": entry})}
    if open_ports is not None:
        annotations["k8s.ovn.org/open-default-ports"] = open_ports
    return {"metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
            "spec": {"nodeName": "n1", "hostNetwork": host_network},
            "status": {"podIPs": [{"ip": ip} for ip in ips]} if status else {}}


def test_pod_elements_ips_and_open_ports() -> None:
    desired = build_pod_elements(pod(("10.244.1.5", "fd00::5"), open_ports=(
        "- protocol: tcp\n  port: 80\n- protocol: icmp\n- protocol: udp\n  port: 53\n")))
    assert desired.open_ports_error == ""
    assert desired.elements == {
        "udn-pod-default-ips-v4": {"10.244.1.5"}, "udn-pod-default-ips-v6": {"fd00::5"},
        "udn-open-ports-icmp-v4": {"10.244.1.5"}, "udn-open-ports-icmp-v6": {"fd00::5"},
        "udn-open-ports-v4": {"10.244.1.5 . tcp . 80", "10.244.1.5 . udp . 53"},
        "udn-open-ports-v6": {"fd00::5 . tcp . 80", "fd00::5 . udp . 53"}}


def test_pod_elements_not_isolated_or_without_ips() -> None:
    assert build_pod_elements(None).elements == {}
    assert build_pod_elements(pod(role="primary")).elements == {}
    assert build_pod_elements(pod(host_network=True)).elements == {}
    no_status = build_pod_elements(pod(status=False))  # the annotation's IPs then
    assert no_status.elements == {"udn-pod-default-ips-v4": {"10.244.1.5"}}
    assert build_pod_elements(pod(ips=(), status=False)).elements == {}


def test_bad_open_ports_keep_the_ips_drop_the_ports() -> None:
    desired = build_pod_elements(pod(open_ports="- protocol: tcp\n"))
    assert desired.elements == {"udn-pod-default-ips-v4": {"10.244.1.5"}}
    assert desired.open_ports_error == "port is required for tcp protocol"


# -- reference counts ----------------------------------------------------------------------
def test_reused_ip_stays_while_another_pod_holds_it() -> None:
    ips = host_rules.POD_IPS_V4
    refs = ElementRefs()
    first = {ips: frozenset({"10.0.0.1"})}
    changes = refs.changes("ns/old", first)
    assert changes[ips].add == {"10.0.0.1"} and not changes[ips].delete
    refs.commit("ns/old", first)
    assert refs.changes("ns/new", first) == {}  # already in the set: nothing to write
    refs.commit("ns/new", first)
    assert refs.changes("ns/old", {}) == {}  # the old pod goes; the new one keeps the IP
    refs.commit("ns/old", {})
    assert refs.members(ips) == {"10.0.0.1"}
    gone = refs.changes("ns/new", {})
    assert gone[ips].delete == {"10.0.0.1"}
    refs.commit("ns/new", {})
    assert refs.members(ips) == set() and refs.by_pod == {} and refs.holders[ips] == {}


def test_update_moves_elements() -> None:
    ports = host_rules.OPEN_PORTS_V4
    refs = ElementRefs.of([("ns/a", {ports: frozenset({"10.0.0.1 . tcp . 80"})})])
    changes = refs.changes("ns/a", {ports: frozenset({"10.0.0.1 . tcp . 8080"})})
    assert (changes[ports].add, changes[ports].delete) == (
        {"10.0.0.1 . tcp . 8080"}, {"10.0.0.1 . tcp . 80"})
