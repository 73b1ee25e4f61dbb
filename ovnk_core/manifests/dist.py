"""``dist/``: the manifests that install ovnk on a cluster, rendered as kubectl renders them.

``dist/kustomization.yaml`` is plain kustomize: ``kubectl kustomize dist/`` (the
``kubectl`` of the image, or any 1.27+) renders every object.  This module renders it
the same way, for ``ovnk local up --from-manifests`` and for the tests that check the
manifests against the code (a flag ``ovnk`` does not take, a mount without its volume, a
service account nobody binds).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ovnk_core.errors import OvnkError

JSON = dict[str, Any]
DIST_DIR = Path(__file__).resolve().parents[2] / "dist"
KUBECTL = "kubectl"


def render(directory: Path = DIST_DIR, kubectl: str = KUBECTL) -> list[JSON]:
    """The objects of ``kubectl kustomize directory``, in its order.

    :raises OvnkError: no kubectl, or kustomize refuses the directory (its message).
    """
    if shutil.which(kubectl) is None:
        raise OvnkError(f"rendering {directory} needs {kubectl} (kubectl kustomize)")
    result = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise OvnkError(f"kubectl kustomize {directory}: {result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def find(objects: list[JSON], kind: str, name: str) -> JSON:
    """The rendered object of that kind and name; an ``OvnkError`` when there is none."""
    for obj in objects:
        if obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name:
            return obj
    raise OvnkError(f"the manifests have no {kind} {name}")


def pod_spec(workload: JSON) -> JSON:
    """The pod template's spec of a Deployment or DaemonSet."""
    spec: JSON = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: JSON) -> Iterator[JSON]:
    """Init containers, then containers, of a workload's pod template."""
    spec = pod_spec(workload)
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


__all__ = ["DIST_DIR", "containers", "find", "pod_spec", "render"]
