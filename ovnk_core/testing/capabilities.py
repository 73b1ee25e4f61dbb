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

NB_SCHEMA = Path("/usr/share/ovn/ovn-nb.ovsschema")
SB_SCHEMA = Path("/usr/share/ovn/ovn-sb.ovsschema")
TIERS = ("unit", "ovsdb", "netns", "e2e")


def _missing_binaries(*names: str) -> list[str]:
    return [name for name in names if shutil.which(name) is None]


@functools.cache
def missing_for(tier: str) -> str | None:
    """Why ``tier`` cannot run here, or ``None`` when it can."""
    if tier == "ovsdb":
        missing = _missing_binaries("ovsdb-server", "ovsdb-tool")
        if missing:
            return f"ovsdb tier needs {', '.join(missing)} (Debian package ovn-central)"
        if not NB_SCHEMA.exists():
            return f"ovsdb tier needs the OVN NB schema at {NB_SCHEMA}"
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
        missing = _missing_binaries("ovn-northd", "ovn-trace", "ovn-nbctl", "ovn-sbctl")
        if missing:
            return f"e2e tier needs {', '.join(missing)} (Debian package ovn-central)"
        if _missing_binaries("kubectl"):
            return "e2e tier needs kubectl (the image's kubectl, or Debian's kubernetes-client)"
        if not SB_SCHEMA.exists():
            return f"e2e tier needs the OVN SB schema at {SB_SCHEMA}"
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
