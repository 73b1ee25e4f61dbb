"""Installing the CNI plugin on a node: the plugin as one file and the node's conflist.

A container runtime runs plugins from the node's ``CNI_PATH`` (``/opt/cni/bin``) and reads
the network configuration from the node's CNI config dir (``/etc/cni/net.d``), both on the
host, outside any image.  Upstream's DaemonSet copies its static Go shim there; ovnk's
shim is Python that imports only the standard library, so ``ovnk cni-install`` (the
DaemonSet's init container) writes it as a zip application (``zipapp``): one executable
file holding this package, run by the host's ``python3``.  Both files are written under a
temporary name and renamed, so the runtime never executes or reads half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipapp
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PLUGIN_NAME = "ovn-k8s-cni-overlay"
CONFLIST_NAME = "10-ovn-kubernetes.conflist"
NETWORK_NAME = "ovn-kubernetes"
CONFLIST_VERSION = "1.0.0"  # what Debian's reference plugins, chained after ovnk's, speak
HOST_PYTHON = "/usr/bin/env python3"
PACKAGE_DIR = Path(__file__).resolve().parent


def build_conflist(server_socket: str | Path,
                   chained: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The node's network configuration list: ovnk's plugin, then ``chained`` ones."""
    return {"cniVersion": CONFLIST_VERSION, "name": NETWORK_NAME, "plugins": [
        {"type": PLUGIN_NAME, "server-socket": str(server_socket)}, *chained]}


def _replace(path: Path, write: Any, mode: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        temporary.chmod(mode)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def write_conflist(conf_dir: Path, server_socket: str | Path,
                   chained: Sequence[dict[str, Any]] = ()) -> Path:
    """Write ``conf_dir/10-ovn-kubernetes.conflist``; its path."""
    text = json.dumps(build_conflist(server_socket, chained), indent=2) + "\n"
    return _replace(conf_dir / CONFLIST_NAME, lambda p: p.write_text(text), 0o644)


def write_plugin(bin_dir: Path, interpreter: str = HOST_PYTHON) -> Path:
    """Write ``bin_dir/ovn-k8s-cni-overlay``, this package as an executable zip
    application run by ``interpreter``; its path."""
    def archive(target: Path) -> None:
        with tempfile.TemporaryDirectory() as staging:
            source = Path(staging)
            package = source / "ovnk_cni"
            package.mkdir()
            for module in sorted(PACKAGE_DIR.glob("*.py")):
                (package / module.name).write_bytes(module.read_bytes())
            (source / "__main__.py").write_text(
                "import sys\nfrom ovnk_cni.shim import main\nsys.exit(main())\n")
            zipapp.create_archive(source, target, interpreter=interpreter)
    return _replace(bin_dir / PLUGIN_NAME, archive, 0o755)


__all__ = ["CONFLIST_NAME", "NETWORK_NAME", "PLUGIN_NAME", "build_conflist",
           "write_conflist", "write_plugin"]
