"""The RBAC ovnk's processes need, as a deployment ships it (``manifests/rbac/*.yaml``).

The same documents are applied by ``ovnk local`` and by the tests that run a
component as its own identity, so a permission the code needs and the role
lacks fails in the suite as it would in a real cluster.  Each component's role
has an aggregated companion, ``<role>-plugins``, bound to the same identity:
the rights enabled plugins contribute reach it through ClusterRole aggregation
(``plugin_rbac``).  ``python -m ovnk_core.manifests.rbac [COMPONENT FLAGS]``
prints every document a cluster of that configuration applies: ovnk's, then its
enabled plugins' ClusterRoles.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ovnk_core.config import Config, add_config_arguments, load_config
from ovnk_core.errors import OvnkError
from ovnk_core.manifests.kustomize import manifest_files
from ovnk_core.manifests.plugin_rbac import plugin_rbac_documents

RBAC_DIR = Path(__file__).resolve().parent / "rbac"


def documents_in(folder: Path) -> list[dict[str, Any]]:
    """Every YAML document of every ``*.yaml`` file in ``folder``, in file-name order (its
    ``kustomization.yaml`` left out)."""
    documents: list[dict[str, Any]] = []
    for path in manifest_files(folder):
        documents.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return documents


def ovnk_rbac_documents(config: Config | None = None) -> list[dict[str, Any]]:
    """ServiceAccounts, ClusterRoles, Roles and bindings of ovnk's processes, then (with
    ``config``) the ClusterRoles the plugins it enables contribute.

    :raises PluginLoadError: an enabled plugin cannot be imported or declares malformed
        ``rbac_rules``.
    """
    shipped = documents_in(RBAC_DIR)
    return shipped if config is None else [*shipped, *plugin_rbac_documents(config)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ovnk_core.manifests.rbac",
        description="Print the RBAC documents a cluster with this configuration applies "
                    "(YAML): ovnk's ServiceAccounts, roles and bindings, then the "
                    "ClusterRoles the enabled plugins contribute (their rbac_rules), "
                    "aggregated into the components' <role>-plugins roles.")
    add_config_arguments(parser)
    cli = {key: value for key, value in vars(parser.parse_args(argv)).items()}
    try:
        documents = ovnk_rbac_documents(load_config(cli))
    except OvnkError as exc:
        print(f"python -m ovnk_core.manifests.rbac: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False, width=100))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["RBAC_DIR", "documents_in", "main", "ovnk_rbac_documents"]
