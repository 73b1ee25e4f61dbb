"""Many ovn-trace verdicts from one ovn-trace process.

A one-shot ``ovn-trace`` reads the whole Southbound database and compiles every logical flow
before it traces its one packet (~0.2 s on a small cluster, most of it not the trace); a
reachability matrix asks for hundreds.  ``ovn-trace --detach`` instead stays connected to
Southbound (following its changes) and answers ``trace`` requests on its unixctl socket
(``ovs-appctl -t SOCKET trace [OPTIONS] DATAPATH MICROFLOW``), a few milliseconds each.
:class:`TraceServer` runs one for the life of a ``with`` block and speaks unixctl's JSON-RPC
itself (no ``ovs-appctl`` process per trace), one connection per calling thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

from ovnk_core.ovn.install import command
from ovnk_core.ovn.trace import TraceError, TraceResult, output_ports

START_TIMEOUT = 30.0
# more than the conntrack lookups of any path through the logical pipelines (each switch and
# router on the way has one or two)
CT_REPEAT = 16


class TraceServer:
    """A running ``ovn-trace --detach`` connected to ``sb_remote``; ``trace`` asks it.

    It reads Southbound once, when it starts (OVN 26.03's daemon does not follow later
    changes): a server answers for the flows of that moment, so start one per question.
    ``ct``: the conntrack state every ``ct_next`` of a trace reports (ovn-trace takes one
    ``--ct`` per ``ct_next``, in order, and its default ``est|trk`` for those beyond: it is
    given ``CT_REPEAT`` times); the daemon takes it at start only, not per request."""

    def __init__(self, sb_remote: str, ct: str | None = None, timeout: float = 30.0) -> None:
        self.sb_remote = sb_remote
        self.ct = ct
        self.timeout = timeout
        self._dir = Path(tempfile.mkdtemp(prefix="ovnk-trace-"))
        self._socket = self._dir / "ovn-trace.ctl"
        self._pidfile = self._dir / "ovn-trace.pid"
        self._local = threading.local()
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._ids = 0

    def __enter__(self) -> TraceServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the daemon; return once it has read Southbound (``--detach`` returns then)."""
        args = command("ovn-trace", f"--db={self.sb_remote}", f"--unixctl={self._socket}",
                       f"--pidfile={self._pidfile}", "--detach", "--no-chdir",
                       *([f"--ct={self.ct}"] * CT_REPEAT if self.ct else []),
                       "--log-file=" + str(self._dir / "ovn-trace.log"), "-vconsole:off")
        try:
            subprocess.run(args, check=True, capture_output=True, text=True,
                           timeout=START_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            self._cleanup()
            raise TraceError(f"ovn-trace --detach failed: {exc.stderr.strip()}") from None
        except subprocess.TimeoutExpired:
            self.stop()
            raise TraceError(f"ovn-trace did not connect to {self.sb_remote} within "
                             f"{START_TIMEOUT}s") from None

    def stop(self) -> None:
        """Close every connection and end the daemon (by its pidfile: ours only)."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        with contextlib.suppress(OSError, ValueError):
            pid = int(self._pidfile.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.02)
            else:
                os.kill(pid, signal.SIGKILL)
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def _connection(self) -> tuple[socket.socket, list[str]]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.settimeout(self.timeout)
            try:
                conn.connect(str(self._socket))
            except OSError as exc:
                conn.close()
                raise TraceError(f"ovn-trace's socket {self._socket}: {exc}") from None
            self._local.conn, self._local.buffer = conn, [""]
            with self._lock:
                self._connections.append(conn)
        return conn, self._local.buffer

    def call(self, *params: str) -> str:
        """The reply to unixctl's ``trace PARAMS`` (its text), or ``TraceError``."""
        conn, buffer = self._connection()
        with self._lock:
            self._ids += 1
            request_id = self._ids
        request = {"method": "trace", "params": list(params), "id": request_id}
        decoder = json.JSONDecoder()
        try:
            conn.sendall(json.dumps(request).encode())
            while True:
                try:
                    reply, end = decoder.raw_decode(buffer[0])
                except ValueError:
                    chunk = conn.recv(1 << 16)
                    if not chunk:
                        raise TraceError("ovn-trace closed its socket") from None
                    buffer[0] += chunk.decode()
                    continue
                buffer[0] = buffer[0][end:].lstrip()
                break
        except OSError as exc:
            raise TraceError(f"ovn-trace did not answer: {exc}") from None
        if reply.get("error") is not None:
            raise TraceError(f"ovn-trace: {str(reply['error']).strip()}")
        return str(reply.get("result") or "")

    def trace(self, datapath: str, flow: str) -> TraceResult:
        """What :func:`ovnk_core.ovn.trace.trace` says of ``flow`` entering ``datapath``
        (with this server's ``ct``)."""
        text = self.call("--minimal", datapath, flow)
        if not any(line.startswith("# ") for line in text.splitlines()):
            raise TraceError(f"ovn-trace {datapath} failed: {text.strip() or 'no output'}")
        return TraceResult(datapath, flow, text, output_ports(text))
