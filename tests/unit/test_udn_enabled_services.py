"""``udn-enabled-svc-cluster-ips`` rows (pure): one set per cluster IP family, upstream's ids."""

from __future__ import annotations

from ovnk_core.ovn.hashed_names import hash_for_ovn
from ovnk_core.zone.services.udn_enabled import build_address_sets


def test_one_set_per_cluster_family_with_the_addresses_of_its_family() -> None:
    rows = build_address_sets(["fd00:10:96::a", "10.96.0.10", "10.96.0.1"], (6, 4))
    assert [(r.ids.primary_id, r.columns["name"], r.columns["addresses"]) for r in rows] == [
        ("udn-enabled-svc:UDNEnabledService:udn-enabled-svc-cluster-ips:v4",
         hash_for_ovn("udn-enabled-svc:UDNEnabledService:udn-enabled-svc-cluster-ips:v4"),
         ["10.96.0.1", "10.96.0.10"]),
        ("udn-enabled-svc:UDNEnabledService:udn-enabled-svc-cluster-ips:v6",
         hash_for_ovn("udn-enabled-svc:UDNEnabledService:udn-enabled-svc-cluster-ips:v6"),
         ["fd00:10:96::a"])]
    assert rows[1].external_ids()["ip-family"] == "v6"


def test_a_family_the_cluster_does_not_have_gets_no_set_and_none_of_its_addresses() -> None:
    [row] = build_address_sets(["fd00:10:96::a", "10.96.0.1"], (4,))
    assert row.columns["addresses"] == ["10.96.0.1"]
    assert build_address_sets([], (4,))[0].columns["addresses"] == []  # exists, empty
