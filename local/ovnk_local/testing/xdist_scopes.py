"""Which pytest-xdist worker runs what under ``--dist loadscope`` (``make pytest``'s netns and
e2e tiers, ``make test-compat``): each module, or class, in one worker (xdist's loadscope),
and the modules that share one ``ovnk local`` cluster (``shared_cluster.SCOPE_GROUPS``: the
dataplane cluster's ``SHARED_MODULES``, the control-plane cluster's
``CONTROL_PLANE_MODULES``) all in one worker per cluster, which owns that cluster.

This is done in the scheduler, from test ids alone, because the controller never imports the
tests; the marker way (``xdist_group`` with ``--dist loadgroup``) does nothing with pytest 9.2
and pytest-xdist 3.8: xdist appends the group to ``item._nodeid``, which pytest 9 no longer
reads, so every test is scheduled on its own.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from ovnk_local.testing.shared_cluster import SCOPE_GROUPS


class SharedClusterScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """loadscope, with the modules of each shared cluster as one scope."""

    def _split_scope(self, nodeid: str) -> str:
        group = SCOPE_GROUPS.get(nodeid.split("::", 1)[0])
        return group if group is not None else str(super()._split_scope(nodeid))


def make_scheduler(config: Any, log: Any) -> SharedClusterScheduling | None:
    """The scheduler for ``--dist loadscope``; None (xdist's own) for any other mode."""
    if config.getvalue("dist") != "loadscope":
        return None
    return SharedClusterScheduling(config, log)


__all__ = ["SharedClusterScheduling", "make_scheduler"]
