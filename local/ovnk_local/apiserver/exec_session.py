"""``pods/exec`` over a WebSocket: run a command in the pod's network namespace.

A real API server hands ``exec`` to the pod's kubelet, which enters the
container.  The local cluster's pods are network namespaces on this machine
(the real dataplane), so the local API server runs the command itself with
``ip netns exec``, in the namespace its ``--pod-netns-template`` names for the
pod's node, namespace and name.  Channels follow ``v5.channel.k8s.io`` (and
v4): stdin 0, stdout 1, stderr 2, the final Status on 3, terminal resize on 4,
and v5's 255 to close stdin.  With ``tty=true`` the command gets a
pseudo-terminal, so ``kubectl exec -it POD -- sh`` works too.

A pod here has no filesystem of its own: the command sees the host's.  So it
never runs as the server's (root) user: ``setpriv`` drops it to ``nobody``
with no capabilities, no supplementary groups and ``no_new_privs`` (set-uid
and file capabilities do nothing), in ``/`` with a clean environment, the way
a container runs as a non-root user.  The node agent lets every group open
ICMP datagram sockets in pod namespaces (``net.ipv4.ping_group_range``, as
container runtimes do), so ``ping`` still works.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import pty
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence
from typing import Any

from ovnk_core import jsondepth
from ovnk_local.apiserver.websocket import OP_BINARY, OP_CLOSE, OP_TEXT, WebSocket

log = logging.getLogger(__name__)

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(code: int) -> dict[str, Any]:
    """The Status kubectl turns into its own exit code (``command terminated with ...``)."""
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[...], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def failure_status(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
            "code": 500}


# nobody:nogroup, no capabilities, no supplementary groups, no_new_privs (an exec can
# never gain privileges: set-uid bits and file capabilities are ignored).  The bounding set
# is left alone: the kernel refuses to exec a file whose capabilities it does not contain
# (iputils' ping has cap_net_raw), while no_new_privs already keeps them from being granted.
UNPRIVILEGED = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", "--no-new-privs")


class ExecSession:
    """One running command and the WebSocket it is attached to."""

    def __init__(self, socket: WebSocket, netns: str, command: Sequence[str], stdin: bool,
                 tty: bool) -> None:
        self.socket = socket
        self.netns = netns
        self.command = list(command)
        self.stdin = stdin
        self.tty = tty

    def _send(self, channel: int, data: bytes) -> None:
        self.socket.send(OP_BINARY, bytes([channel]) + data)

    def run(self) -> None:
        argv = ["ip", "netns", "exec", self.netns, *UNPRIVILEGED, "--", *self.command]
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": "/", **({"TERM": "xterm"} if self.tty else {})}
        master = None
        try:
            if self.tty:
                master, slave = pty.openpty()
                process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                           start_new_session=True, close_fds=True, env=env,
                                           cwd="/")
                os.close(slave)
            else:
                process = subprocess.Popen(
                    argv, stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd="/")
        except OSError as exc:
            self._send(ERROR, json.dumps(failure_status(f"cannot run {self.command}: {exc}"))
                       .encode())
            self.socket.close()
            return
        pumps = []
        if master is not None:
            pumps.append(self._pump(master, STDOUT))
        else:
            assert process.stdout is not None and process.stderr is not None
            pumps.append(self._pump(process.stdout.fileno(), STDOUT))
            pumps.append(self._pump(process.stderr.fileno(), STDERR))
        reader = threading.Thread(target=self._read_client, args=(process, master),
                                  name="exec-stdin", daemon=True)
        reader.start()
        code = process.wait()
        for pump in pumps:
            pump.join(timeout=5)
        status = success_status() if code == 0 else exit_status(code if code > 0 else 128 - code)
        try:
            self._send(ERROR, json.dumps(status).encode())
        except OSError:
            pass
        self.socket.close()
        if master is not None:
            os.close(master)

    def _pump(self, fd: int, channel: int) -> threading.Thread:
        def copy() -> None:
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # a pty's master reads EIO once the command is gone
                    return
                if not data:
                    return
                try:
                    self._send(channel, data)
                except OSError:
                    return
        thread = threading.Thread(target=copy, name=f"exec-out-{channel}", daemon=True)
        thread.start()
        return thread

    def _read_client(self, process: subprocess.Popen[bytes], master: int | None) -> None:
        """Client messages: stdin data, stdin close, terminal resize, connection close."""
        while True:
            try:
                message = self.socket.receive()
            except (EOFError, OSError, ValueError):
                break
            if message.opcode == OP_CLOSE:
                break
            if message.opcode not in (OP_BINARY, OP_TEXT) or not message.payload:
                continue
            channel, data = message.payload[0], message.payload[1:]
            if channel == STDIN and data:
                self._write_stdin(process, master, data)
            elif channel == CLOSE and data[:1] == bytes([STDIN]):
                self._close_stdin(process, master)
            elif channel == RESIZE and master is not None:
                self._resize(master, data)
        if process.poll() is None and (self.stdin or self.tty):
            self._close_stdin(process, master)

    @staticmethod
    def _write_stdin(process: subprocess.Popen[bytes], master: int | None, data: bytes) -> None:
        try:
            if master is not None:
                os.write(master, data)
            elif process.stdin is not None:
                process.stdin.write(data)
                process.stdin.flush()
        except OSError:
            pass

    @staticmethod
    def _close_stdin(process: subprocess.Popen[bytes], master: int | None) -> None:
        try:
            if master is not None:
                os.write(master, b"\x04")  # end of input on a terminal
            elif process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass

    @staticmethod
    def _resize(master: int, data: bytes) -> None:
        try:
            size = jsondepth.loads(data)  # nested too deeply: a ValueError too
            fcntl.ioctl(master, termios.TIOCSWINSZ,
                        struct.pack("HHHH", int(size.get("Height", 24)),
                                    int(size.get("Width", 80)), 0, 0))
        except (ValueError, OSError, AttributeError):
            log.debug("exec: ignored a malformed resize message %r", data)
