"""A controller's own writes overlay its informer cache until the cache catches up."""

from __future__ import annotations

import pytest

from ovnk_core.kube.writes import RecentWrites, caught_up

pytestmark = pytest.mark.unit


def obj(name: str, rv: str, source: str = "s") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                         "annotations": {"source": source}}}


def belongs(o: dict[str, object]) -> bool:
    return o["metadata"]["annotations"]["source"] == "s"  # type: ignore[index]


def test_created_object_is_visible_until_the_cache_shows_it() -> None:
    writes = RecentWrites()
    cache: dict[str, dict[str, object]] = {}
    writes.wrote(obj("m1", "10"))
    assert [o["metadata"]["name"] for o in writes.overlay([], belongs, cache.get)] == ["m1"]
    cache["ns/m1"] = obj("m1", "10")
    assert writes.overlay([cache["ns/m1"]], belongs, cache.get) == [cache["ns/m1"]]
    assert writes.pending() == 0


def test_an_update_wins_over_an_older_cache_and_loses_to_a_newer_one() -> None:
    writes = RecentWrites()
    cache = {"ns/m1": obj("m1", "10")}
    writes.wrote(obj("m1", "12"))
    [seen] = writes.overlay([cache["ns/m1"]], belongs, cache.get)
    assert seen["metadata"]["resourceVersion"] == "12"  # type: ignore[index]
    cache["ns/m1"] = obj("m1", "15")
    [seen] = writes.overlay([cache["ns/m1"]], belongs, cache.get)
    assert seen["metadata"]["resourceVersion"] == "15"  # type: ignore[index]
    assert writes.pending() == 0


def test_a_deleted_object_is_hidden_until_the_cache_drops_it() -> None:
    writes = RecentWrites()
    cache = {"ns/m1": obj("m1", "10")}
    writes.deleted(cache["ns/m1"])
    assert writes.overlay([cache["ns/m1"]], belongs, cache.get) == []
    del cache["ns/m1"]
    assert writes.overlay([], belongs, cache.get) == []
    assert writes.pending() == 0


def test_informer_events_retire_writes() -> None:
    writes = RecentWrites()
    writes.wrote(obj("m1", "10"))
    writes.observe("MODIFIED", None, obj("m1", "9"))
    assert writes.pending() == 1
    writes.observe("MODIFIED", None, obj("m1", "10"))
    assert writes.pending() == 0
    writes.deleted(obj("m2", "3"))
    writes.observe("DELETED", obj("m2", "3"), None)
    assert writes.pending() == 0


def test_writes_of_other_queries_are_not_shown() -> None:
    writes = RecentWrites()
    writes.wrote(obj("m9", "10", source="other"))
    assert writes.overlay([], belongs, {}.get) == []
    assert writes.pending() == 1


def test_non_integer_versions_compare_by_equality() -> None:
    assert caught_up(obj("a", "abc"), obj("a", "abc"))
    assert not caught_up(obj("a", "abd"), obj("a", "abc"))
    assert caught_up(obj("a", "11"), obj("a", "9"))
