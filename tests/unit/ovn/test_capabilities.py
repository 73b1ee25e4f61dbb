"""What NB supports, read from its schema's columns and version."""

from __future__ import annotations

import pytest

from ovnk_core.ovn.capabilities import CURRENT, LEGACY, NbCapabilities, parse_version

pytestmark = pytest.mark.unit


def test_columns_and_version_say_what_nb_supports() -> None:
    old = NbCapabilities.from_columns("7.0.0", {"ACL": {"name", "match"}, "NAT": {"type"}})
    assert old == LEGACY
    new = NbCapabilities.from_columns("7.18.0", {"ACL": {"tier"}, "NAT": {"match"}})
    assert new == CURRENT
    # tiers (23.06) and NAT match (23.09) before transit routers: a schema in between
    between = NbCapabilities.from_columns("7.3.0", {"ACL": {"tier"}, "NAT": {"match"}})
    assert (between.acl_tier, between.nat_match, between.router_peering) == (True, True, False)
    assert "none of" in LEGACY.describe() and "ACL tiers" in CURRENT.describe()


def test_schema_versions_compare_as_numbers() -> None:
    assert parse_version("7.18.0") > parse_version("7.9.1")
    assert parse_version("7") == (7, 0, 0) and parse_version("7.x.1") == (7, 0, 1)
