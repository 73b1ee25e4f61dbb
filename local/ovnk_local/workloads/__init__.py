"""What a local pod's container may run: a small, fixed set of images and commands.

``ovnk local`` has no container runtime and pulls no images: a container whose
image and command are in this table runs as a Python process in the pod's
network namespace (``ovnk_local.workloads.launch``), anything else is refused
with a reason on the pod.  Images are matched by the last component of their
repository, ignoring registry, tag and digest (``registry.k8s.io/e2e-test-
images/agnhost:2.53``, ``agnhost``, ``k8s.gcr.io/pause@sha256:...``):

=================================  ===============================================
image, command / args              runs
=================================  ===============================================
``pause``, no command, no args     pause: sleeps until SIGTERM/SIGINT (exit 0)
``agnhost`` ``[pause]``            pause
``agnhost`` ``[netexec, FLAGS]``   netexec (``ovnk_local.workloads.netexec``):
                                   HTTP on ``--http-port`` (default 8080):
                                   ``/hostname``, ``/clientip``, ``/echo?msg=``,
                                   ``/healthz``, ``/exit?code=``, ``/header?key=``;
                                   UDP echo on ``--udp-port`` (default 8081; -1
                                   off); ``--sctp-port`` must be -1 (no SCTP)
``agnhost`` with no args           pause (upstream prints its help and exits; here
                                   a bare ``agnhost`` idles, so ``kubectl run X
                                   --image=agnhost`` gives a running pod)
=================================  ===============================================

``command`` may name the binary (``["/agnhost"]``, ``["agnhost"]``, ``["/pause"]``);
its further words come before ``args``, as a container runtime joins them.  Any
other image or command is ``Unsupported``: the kubelet leaves the container
``waiting`` with reason ``UnsupportedImage`` and that message, and records a Warning
event of the same reason on the pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PAUSE, NETEXEC = "pause", "netexec"
UNSUPPORTED_REASON = "UnsupportedImage"
SUPPORTED_SUMMARY = ("ovnk local runs only registry.k8s.io/pause and "
                     "registry.k8s.io/e2e-test-images/agnhost (netexec, pause)")

# netexec flags this implementation honours (--flag=value or --flag value)
NETEXEC_FLAGS = ("--http-port", "--udp-port", "--sctp-port")


class Unsupported(ValueError):
    """The container's image or command is not one ``ovnk local`` can run."""


@dataclass(frozen=True)
class Workload:
    """One supported program and its options."""

    kind: str  # PAUSE or NETEXEC
    http_port: int = 8080
    udp_port: int = 8081  # -1: no UDP server

    def argv(self) -> list[str]:
        """The workload's own arguments for ``ovnk_local.workloads.launch``."""
        if self.kind == NETEXEC:
            return [NETEXEC, f"--http-port={self.http_port}", f"--udp-port={self.udp_port}"]
        return [PAUSE]


def repository_name(image: str) -> str:
    """The last component of an image's repository: no registry, path, tag or digest."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def _describe(image: str, command: Sequence[str], args: Sequence[str]) -> str:
    text = f"image {image!r}"
    if command:
        text += f" with command {list(command)!r}"
    if args:
        text += f" {'and' if command else 'with'} args {list(args)!r}"
    return text


def _port(flag: str, value: str, allow_off: bool) -> int:
    try:
        port = int(value)
    except ValueError:
        raise Unsupported(f"{flag}={value!r} is not a port number") from None
    if allow_off and port == -1:
        return port
    if not 0 < port < 65536:
        raise Unsupported(f"{flag}={port} is not a port (1-65535{', or -1' if allow_off else ''})")
    return port


def parse_netexec(words: Sequence[str]) -> Workload:
    """agnhost netexec's flags (those listed in ``NETEXEC_FLAGS``).

    :raises Unsupported: another flag, a bad port, or an SCTP port.
    """
    values: dict[str, str] = {}
    items = list(words)
    while items:
        word = items.pop(0)
        flag, sep, value = word.partition("=")
        if flag.startswith("-") and not flag.startswith("--"):
            flag = "-" + flag  # Go's flag package takes -flag as --flag
        if flag not in NETEXEC_FLAGS:
            raise Unsupported(f"netexec flag {word!r} is not supported (supported: "
                              f"{', '.join(NETEXEC_FLAGS)})")
        if not sep:
            if not items:
                raise Unsupported(f"netexec flag {word!r} needs a value")
            value = items.pop(0)
        values[flag] = value
    http = _port("--http-port", values.get("--http-port", "8080"), allow_off=False)
    udp = _port("--udp-port", values.get("--udp-port", "8081"), allow_off=True)
    if _port("--sctp-port", values.get("--sctp-port", "-1"), allow_off=True) != -1:
        raise Unsupported("netexec --sctp-port is not supported (no SCTP server)")
    return Workload(NETEXEC, http_port=http, udp_port=udp)


def resolve(container: dict[str, Any]) -> Workload:
    """The workload a pod's container runs.

    :raises Unsupported: with a message naming the image and command.
    """
    image = str(container.get("image") or "")
    command = [str(word) for word in container.get("command") or []]
    args = [str(word) for word in container.get("args") or []]
    try:
        return _resolve(repository_name(image), command, args)
    except Unsupported as exc:
        raise Unsupported(f"{_describe(image, command, args)} is not supported: {exc} "
                          f"({SUPPORTED_SUMMARY})") from None


def _resolve(name: str, command: list[str], args: list[str]) -> Workload:
    if name == PAUSE:
        if (command and command[0].rsplit("/", 1)[-1] != PAUSE) or command[1:] or args:
            raise Unsupported("the pause image takes no command or arguments")
        return Workload(PAUSE)
    if name != "agnhost":
        raise Unsupported("unknown image")
    if command and command[0].rsplit("/", 1)[-1] != "agnhost":
        raise Unsupported("agnhost's command must be the agnhost binary")
    words = command[1:] + args
    if not words or words == [PAUSE]:
        return Workload(PAUSE)
    if words[0] == NETEXEC:
        return parse_netexec(words[1:])
    raise Unsupported(f"agnhost subcommand {words[0]!r} is not supported")
