"""The RBAC ovnk's processes need, as a deployment ships it (``manifests/rbac/*.yaml``).

The same documents are applied by ``ovnk local`` and by the tests that run a
component as its own identity, so a permission the code needs and the role
lacks fails in the suite as it would in a real cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RBAC_DIR = Path(__file__).resolve().parent / "rbac"


def documents_in(folder: Path) -> list[dict[str, Any]]:
    """Every YAML document of every ``*.yaml`` file in ``folder``, in file-name order."""
    documents: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        documents.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return documents


def ovnk_rbac_documents() -> list[dict[str, Any]]:
    """ServiceAccounts, ClusterRoles, Roles and bindings of ovnk's processes."""
    return documents_in(RBAC_DIR)


__all__ = ["RBAC_DIR", "documents_in", "ovnk_rbac_documents"]
