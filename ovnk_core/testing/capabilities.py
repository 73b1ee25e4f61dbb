"""What each test tier needs from the machine, and why it is missing when it is.

A tier whose requirement is missing is skipped with the reason — except in
CI (``CI=true``), where every tier must run, so the same reason fails the
test instead of hiding it.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import NoReturn

from ovnk_core.ovn.install import (
    PINNED_SERIES,
    SYSTEM,
    OvnInstall,
    OvnInstallError,
    select,
    selected,
)

TIERS = ("unit", "ovsdb", "netns", "e2e")


def _missing_binaries(*names: str) -> list[str]:
    return [name for name in names if shutil.which(name) is None]


def _missing_ovn(tier: str, *names: str) -> str | None:
    """Why the selected OVN (``OVNK_OVN``) cannot run ``tier``: a root that was not made,
    or programs it lacks."""
    try:
        install: OvnInstall = selected()
    except OvnInstallError as exc:
        return f"{tier} tier needs OVN: {exc}"
    missing = install.missing(*names)
    if missing:
        where = "Debian package ovn-central" if install.root is None else f"root {install.root}"
        return f"{tier} tier needs {', '.join(missing)} ({where})"
    return None


@functools.cache
def missing_for(tier: str) -> str | None:
    """Why ``tier`` cannot run here, or ``None`` when it can."""
    if tier == "ovsdb":
        reason = _missing_ovn(tier, "ovsdb-server", "ovsdb-tool", "ovsdb-client")
        if reason:
            return reason
        if not selected().schema("ovn-nb").exists():
            return f"ovsdb tier needs the OVN NB schema at {selected().schema('ovn-nb')}"
        return None
    if tier == "netns":
        if os.geteuid() != 0:
            return "netns tier needs root (network namespaces, nftables, netlink)"
        missing = _missing_binaries("ip", "nft")
        if missing:
            return f"netns tier needs {', '.join(missing)} (iproute2, nftables)"
        try:
            import nftables  # noqa: F401
        except ImportError:
            return "netns tier needs the libnftables binding (python3-nftables)"
        return None
    if tier == "e2e":
        reason = missing_for("ovsdb")
        if reason:
            return reason
        reason = _missing_ovn(tier, "ovn-northd", "ovn-trace", "ovn-nbctl", "ovn-sbctl")
        if reason:
            return reason
        if _missing_binaries("kubectl"):
            return "e2e tier needs kubectl (the image's kubectl, or Debian's kubernetes-client)"
        if not selected().schema("ovn-sb").exists():
            return f"e2e tier needs the OVN SB schema at {selected().schema('ovn-sb')}"
        return None
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_capability(reason: str) -> NoReturn:
    """End the test for a capability this machine lacks: skipped with ``reason`` — or, in
    CI, where every tier must run, failed with it."""
    import pytest

    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


def both_nb_schemas() -> tuple[Path, Path]:
    """The NB schemas of the host's OVN (23.03) and of the pinned one (26.03), for tests of
    an OVN switched under ovnk; a missing one ends the test (``missing_capability``)."""
    try:
        old = select(SYSTEM).schema("ovn-nb")
        new = select(PINNED_SERIES).schema("ovn-nb")
    except OvnInstallError as exc:
        missing_capability(f"switching OVN needs both OVNs: {exc}")
    for path in (old, new):
        if not path.is_file():
            missing_capability(f"switching OVN needs both OVNs' NB schemas: no {path}")
    return old, new
