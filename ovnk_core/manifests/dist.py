"""``dist/``: the manifests that install ovnk on a cluster, rendered as kubectl renders them.

``dist/kustomization.yaml`` is plain kustomize: ``kubectl kustomize dist/`` (the
``kubectl`` of the image, or any 1.27+) renders every object.  This module renders it
the same way, for ``ovnk local up --from-manifests`` and for the tests that check the
manifests against the code (a flag ``ovnk`` does not take, a mount without its volume, a
service account nobody binds).

``dist/rbac-plugins.yaml`` holds the ClusterRoles the plugins enabled by ``dist/ovnk.toml``
contribute (their ``rbac_rules``, aggregated into the components' ``<role>-plugins``
roles); ``python -m ovnk_core.manifests.dist`` writes it from that file, and a test fails
when it drifts (``--check``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ovnk_core.config import load_config
from ovnk_core.errors import OvnkError
from ovnk_core.manifests.plugin_rbac import plugin_rbac_documents

JSON = dict[str, Any]
DIST_DIR = Path(__file__).resolve().parents[2] / "dist"
KUBECTL = "kubectl"
CONFIG_FILE = "ovnk.toml"
PLUGIN_RBAC_FILE = "rbac-plugins.yaml"
PLUGIN_RBAC_HEADER = """\
# Written by python -m ovnk_core.manifests.dist from ovnk.toml: the ClusterRoles the plugins
# that configuration enables contribute (their rbac_rules), aggregated by the API server
# into the components' <role>-plugins roles.  Enable another plugin in ovnk.toml, run it
# again.
"""


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


def plugin_rbac_text(directory: Path = DIST_DIR) -> str:
    """``rbac-plugins.yaml`` as the plugins ``directory/ovnk.toml`` enables make it."""
    config = load_config({}, env={}, config_file=directory / CONFIG_FILE)
    documents = plugin_rbac_documents(config)
    return PLUGIN_RBAC_HEADER + yaml.safe_dump_all(documents, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ovnk_core.manifests.dist",
        description=f"Write dist/{PLUGIN_RBAC_FILE}: the ClusterRoles of the plugins "
                    f"dist/{CONFIG_FILE} enables.")
    parser.add_argument("--dir", type=Path, default=DIST_DIR)
    parser.add_argument("--check", action="store_true",
                        help="only say whether the file is up to date (exit 1 if not)")
    args = parser.parse_args(argv)
    try:
        text = plugin_rbac_text(args.dir)
    except OvnkError as exc:
        print(f"python -m ovnk_core.manifests.dist: {exc}", file=sys.stderr)
        return 2
    path = args.dir / PLUGIN_RBAC_FILE
    if args.check:
        current = path.read_text() if path.is_file() else ""
        if current != text:
            print(f"{path} is out of date: run python -m ovnk_core.manifests.dist",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["DIST_DIR", "containers", "find", "main", "plugin_rbac_text", "pod_spec",
           "render"]
