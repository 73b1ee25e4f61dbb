"""The manifests' folders as kustomize bases.

``dist/kustomization.yaml`` includes ``manifests/crds`` and ``manifests/rbac`` as
directories, so a deployment applies the very files ovnk ships and tests (one copy, no
second one under ``dist/``).  Each folder holds a ``kustomization.yaml`` listing its
manifests; the readers of the manifests leave that file out.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

KUSTOMIZATION = "kustomization.yaml"


def manifest_files(folder: Path) -> list[Path]:
    """The ``*.yaml`` manifests of ``folder`` by name, its ``kustomization.yaml`` left out."""
    return sorted(path for path in folder.glob("*.yaml") if path.name != KUSTOMIZATION)


def render_kustomization(resources: Iterable[str], comment: str) -> str:
    """A ``kustomization.yaml`` listing ``resources``, under a ``#`` comment."""
    body = yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                           "kind": "Kustomization", "resources": sorted(resources)},
                          sort_keys=False)
    lines = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return lines + body


def listed_resources(folder: Path) -> list[str]:
    """What ``folder``'s ``kustomization.yaml`` lists (empty when it has none)."""
    path = folder / KUSTOMIZATION
    if not path.is_file():
        return []
    return list((yaml.safe_load(path.read_text()) or {}).get("resources") or [])


__all__ = ["KUSTOMIZATION", "listed_resources", "manifest_files", "render_kustomization"]
