"""The registry of served kinds: built-ins plus whatever CRDs define.

Discovery, OpenAPI, routing, tables and the storage layer all ask this
registry what a ``(group, version, plural)`` is: its kind, scope, short
names, subresources, schema and printer columns.  It changes at run time
(a CRD created, updated or deleted), so it carries a revision that the
discovery and OpenAPI documents hash into their ETags.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from ovnk_local.apiserver.errors import JSON

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    """A CRD ``additionalPrinterColumns`` entry (also used for built-in tables)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(eq=False)
class ResourceType:
    """One served ``group/version/plural`` and everything the server must know about it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    storage: str = ""
    schema: JSON | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    merge_keys: dict[str, str] = field(default_factory=dict)
    crd: str = ""
    name_rule: str = "subdomain"
    # a create-only review kind (SelfSubjectAccessReview, TokenReview, ...): answered, never
    # stored, not listed
    ephemeral: bool = False

    def __post_init__(self) -> None:
        if not self.storage:
            self.storage = f"{self.group}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def custom(self) -> bool:
        return bool(self.crd)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def __repr__(self) -> str:
        return f"<ResourceType {self.plural}.{self.group}/{self.version}>"


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting versions in Kubernetes order: v2 > v1 > v1beta2 > v1alpha1 > other."""
    match = _VERSION.match(version)
    if not match:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


class ResourceRegistry:
    """Thread-safe lookup of served resources, with a change revision."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._lock = threading.RLock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._builtin_groups: list[str] = []
        self.revision = 0
        for rt in types:
            self.add(rt)
            if rt.group not in self._builtin_groups:
                self._builtin_groups.append(rt.group)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt`` (replacing one with the same group/version/plural)."""
        with self._lock:
            self._types[(rt.group, rt.version, rt.plural)] = rt
            self.revision += 1

    def replace_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        """Serve exactly ``types`` for the CRD ``crd_name`` (an empty list stops serving it)."""
        with self._lock:
            for key in [k for k, rt in self._types.items() if rt.crd == crd_name]:
                del self._types[key]
            for rt in types:
                self._types[(rt.group, rt.version, rt.plural)] = rt
            self.revision += 1

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served resource at ``group/version/plural``, if any."""
        with self._lock:
            return self._types.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        """Every served resource type."""
        with self._lock:
            return list(self._types.values())

    def for_storage(self, storage: str) -> list[ResourceType]:
        """All served versions stored under ``storage``."""
        with self._lock:
            return [rt for rt in self._types.values() if rt.storage == storage]

    def storage_type(self, storage: str) -> ResourceType | None:
        """The preferred served version of a storage key (used for GC and persistence)."""
        types = sorted(self.for_storage(storage), key=lambda rt: version_priority(rt.version))
        native = [rt for rt in types if rt.storage == f"{rt.group}/{rt.plural}"]
        chosen = native or types
        return chosen[0] if chosen else None

    def groups(self) -> list[tuple[str, list[str]]]:
        """``[(group, [versions, preferred first])]``: built-ins first, then CRD groups."""
        with self._lock:
            versions: dict[str, set[str]] = {}
            for group, version, _ in self._types:
                versions.setdefault(group, set()).add(version)
        order = [g for g in self._builtin_groups if g in versions]
        order += sorted(g for g in versions if g not in order)
        return [(g, sorted(versions[g], key=version_priority)) for g in order]

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The served resource of an ``apiVersion`` and ``kind`` (as in ownerReferences)."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            return next((rt for (g, v, _), rt in self._types.items()
                         if g == group and v == version and rt.kind == kind), None)

    def resources(self, group: str, version: str) -> list[ResourceType]:
        """The resource types served in ``group/version``."""
        with self._lock:
            return [rt for (g, v, _), rt in self._types.items() if g == group and v == version]
