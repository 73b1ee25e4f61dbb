"""A container's view of files: its own mount namespace with its volumes bind-mounted.

``ovnk local up --from-manifests`` runs ovnk's components as the manifests declare
them, and a container finds its ConfigMap, its service account's token and CA, and
the node's host paths at the ``mountPath`` its manifest names
(``/run/ovnkube-config``, ``/var/run/secrets/kubernetes.io/serviceaccount``, ...).
The supervisor calls ``enter_mount_namespace`` between fork and exec: the child
leaves the host's mount namespace (``unshare(CLONE_NEWNS)``), makes every mount a
slave of the host's (nothing it mounts is seen outside, while what the host mounts
later, such as a new network namespace under ``/var/run/netns``, is seen inside: a
``hostPath`` with ``mountPropagation: HostToContainer``), and bind-mounts each volume's
directory on the host at its target, read-only when the mount says so.  A missing
target directory is created on the host first (an empty directory: the mount
itself stays in the child's namespace).  Everything else of the file system is the
host's, as for a container run with the host's root.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterable

CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_SLAVE = 1 << 19

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class MountError(OSError):
    """The mount namespace or one bind mount could not be made."""


def _mount(source: str | None, target: str, flags: int) -> None:
    if _libc.mount(source.encode() if source else None, target.encode(), None,
                   ctypes.c_ulong(flags), None) != 0:
        errno = ctypes.get_errno()
        raise MountError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def enter_mount_namespace(mounts: Iterable[tuple[str, ...]]) -> None:
    """Move the calling process into a new mount namespace (a slave of the host's) and
    bind-mount each
    ``(source, target, "ro"|"rw")`` there, in order."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise MountError(errno, f"unshare(CLONE_NEWNS): {os.strerror(errno)}")
    _mount(None, "/", MS_REC | MS_SLAVE)
    for source, target, mode in mounts:
        os.makedirs(target, exist_ok=True)
        _mount(source, target, MS_BIND | MS_REC)
        if mode == "ro":
            _mount(None, target, MS_REMOUNT | MS_BIND | MS_RDONLY)


__all__ = ["MountError", "enter_mount_namespace"]
