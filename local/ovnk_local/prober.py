"""Each node's probe runner: the kubelet's network probes, from the node and its cgroup.

A real kubelet dials ``httpGet`` and ``tcpSocket`` probes itself, from the node's
network namespace and from its own cgroup.  The local cluster's kubelet stand-in
serves every node from one process in the host's namespace, so per node it keeps a
child process, ``python -m ovnk_local.prober --netns NS [--cgroup DIR]``, which

1. dies with the kubelet (``PR_SET_PDEATHSIG``, and at the end of its stdin),
2. joins the node's kubelet cgroup ``DIR`` (``ovnk_local.cgroups``) before it opens
   any socket, so every probe connection belongs to that cgroup,
3. enters the node's network namespace (``setns``; probes reach pods through the
   node's management port ``ovn-k8s-mp0``, as on a real node),
4. says so in its first line (``{"hello": ..., "cgroup": "/ovnk-local/...", "error":
   ...}``, the cgroup read back from ``/proc/self/cgroup``) and then answers JSON
   requests, one per line, each in a thread of its own::

       {"id": 7, "kind": "http", "scheme": "HTTP", "host": "10.244.1.5", "port": 8080,
        "path": "/healthz", "headers": [["X-A", "b"]], "timeout": 1.0}
       {"id": 8, "kind": "tcp", "host": "10.244.1.5", "port": 8080, "timeout": 1.0}
       -> {"id": 7, "ok": true, "message": ""}

HTTP probes succeed on a status from 200 to 399 (redirects are not followed), with
``User-Agent: kube-probe/1.30`` unless the probe sets one; HTTPS is not verified;
failures read as the kubelet words them (``HTTP probe failed with statuscode: 500``,
``dial tcp 10.244.1.5:8080: connect: connection refused``).  ``ProberClient`` is the
kubelet's side.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import http.client
import itertools
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
USER_AGENT = "kube-probe/1.30"
HELLO_TIMEOUT = 10.0


# -- the prober process --------------------------------------------------------------------
def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _dial_error(host: str, port: int, exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"dial tcp {_hostport(host, port)}: i/o timeout"
    if isinstance(exc, OSError) and exc.strerror:
        return f"dial tcp {_hostport(host, port)}: connect: {exc.strerror.lower()}"
    return f"dial tcp {_hostport(host, port)}: {exc}"


def probe_tcp(host: str, port: int, timeout: float) -> tuple[bool, str]:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, ""
    except OSError as exc:
        return False, _dial_error(host, port, exc)


def probe_http(scheme: str, host: str, port: int, path: str,
               headers: list[tuple[str, str]], timeout: float) -> tuple[bool, str]:
    secure = scheme.upper() == "HTTPS"
    url = f"{'https' if secure else 'http'}://{_hostport(host, port)}{path}"
    connection: http.client.HTTPConnection
    if secure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    names = {name.lower() for name, _ in headers}
    sent = [*headers, *([("User-Agent", USER_AGENT)] if "user-agent" not in names else []),
            *([("Accept", "*/*")] if "accept" not in names else [])]
    try:
        connection.putrequest("GET", path or "/", skip_accept_encoding=True)
        for name, value in sent:
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        response.read(10 * 1024)
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, TimeoutError | socket.timeout):
            return False, (f'Get "{url}": context deadline exceeded (Client.Timeout exceeded '
                           "while awaiting headers)")
        if isinstance(exc, ConnectionRefusedError | OSError) and \
                not isinstance(exc, http.client.HTTPException):
            return False, f'Get "{url}": {_dial_error(host, port, exc)}'
        return False, f'Get "{url}": {exc}'
    finally:
        connection.close()
    if 200 <= response.status < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {response.status}"


def run_probe(request: dict[str, Any]) -> tuple[bool, str]:
    kind = request.get("kind")
    host, port = str(request["host"]), int(request["port"])
    timeout = float(request.get("timeout", 1.0))
    if kind == "tcp":
        return probe_tcp(host, port, timeout)
    if kind == "http":
        headers = [(str(n), str(v)) for n, v in request.get("headers") or []]
        return probe_http(str(request.get("scheme") or "HTTP"), host, port,
                          str(request.get("path") or "/"), headers, timeout)
    return False, f"unknown probe kind {kind!r}"


def own_cgroup() -> str:
    """This process's cgroup v2 path (``0::/...`` in ``/proc/self/cgroup``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prober")
    parser.add_argument("--netns")
    parser.add_argument("--cgroup")
    args = parser.parse_args(argv)
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        return 0  # the kubelet is already gone
    error = ""
    if args.cgroup:
        try:
            Path(args.cgroup, "cgroup.procs").write_text(str(os.getpid()))
        except OSError as exc:
            error = f"cannot join cgroup {args.cgroup}: {exc}"
    if args.netns:
        from ovnk_core.node.netns import enter_netns

        enter_netns(args.netns)
    out = sys.stdout
    lock = threading.Lock()

    def write(message: dict[str, Any]) -> None:
        with lock:
            out.write(json.dumps(message) + "\n")
            out.flush()

    write({"hello": os.getpid(), "cgroup": own_cgroup(), "error": error})

    def answer(request: dict[str, Any]) -> None:
        try:
            ok, message = run_probe(request)
        except Exception as exc:  # a bad request: said, never fatal
            ok, message = False, f"probe error: {exc}"
        write({"id": request.get("id"), "ok": ok, "message": message})

    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        threading.Thread(target=answer, args=(request,), daemon=True).start()
    return 0


# -- the kubelet's side -----------------------------------------------------------------------
class ProberClient:
    """One node's prober process, started on first use and again when it died."""

    def __init__(self, node: str, netns: str | None, cgroup: Path | None,
                 log_file: Path | None = None) -> None:
        self.node = node
        self.netns = netns
        self.cgroup = cgroup
        self.log_file = log_file
        self.joined = ""  # the cgroup its hello reported
        self.error = ""  # why it is not in the kubelet cgroup, when it is not
        self._process: subprocess.Popen[str] | None = None
        self._pending: dict[int, Future[tuple[bool, str]]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "ovnk_local.prober"]
        if self.netns:
            argv += ["--netns", self.netns]
        if self.cgroup is not None:
            argv += ["--cgroup", str(self.cgroup)]
        stderr: IO[str] | int = subprocess.DEVNULL
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            stderr = open(self.log_file, "a")  # noqa: SIM115 (the child holds it)
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True, bufsize=1)
        if not isinstance(stderr, int):
            stderr.close()
        assert process.stdout is not None
        hello: list[dict[str, Any]] = []
        reader = threading.Thread(target=lambda: hello.append(
            json.loads(process.stdout.readline() or "{}")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(HELLO_TIMEOUT)
        if not hello or "hello" not in hello[0]:
            process.kill()
            process.wait()
            raise OSError(f"the prober of node {self.node} did not start (see "
                          f"{self.log_file})")
        self.joined = str(hello[0].get("cgroup") or "")
        self.error = str(hello[0].get("error") or "")
        log.info("prober of node %s: pid %d in network namespace %s, cgroup %s%s", self.node,
                 process.pid, self.netns, self.joined or "?",
                 f" ({self.error})" if self.error else "")
        threading.Thread(target=self._read, args=(process,), name=f"prober-{self.node}",
                         daemon=True).start()
        return process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                future = self._pending.pop(int(answer.get("id") or 0), None)
            if future is not None:
                future.set_result((bool(answer.get("ok")), str(answer.get("message", ""))))
        with self._lock:  # the process ended: nothing pending will be answered
            if self._process is process:
                self._process = None
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_result((False, f"the prober of node {self.node} exited"))

    def start(self) -> None:
        """Start the process now (its hello tells ``joined`` and ``error``).

        :raises OSError: it did not start.
        """
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()

    def probe(self, request: dict[str, Any], timeout: float) -> tuple[bool, str]:
        """Run one probe (``request`` without its id) on the node; (success, message)."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            request_id = next(self._ids)
            future: Future[tuple[bool, str]] = Future()
            self._pending[request_id] = future
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps({**request, "id": request_id}) + "\n")
            process.stdin.flush()
        except OSError as exc:
            with self._lock:
                self._pending.pop(request_id, None)
            return False, f"the prober of node {self.node} is gone: {exc}"
        try:
            return future.result(timeout + 2.0)
        except TimeoutError:
            with self._lock:
                self._pending.pop(request_id, None)
            return False, "probe timed out"

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


if __name__ == "__main__":
    sys.exit(main())
