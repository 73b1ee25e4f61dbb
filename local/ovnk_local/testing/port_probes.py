"""Real TCP and UDP probes between pods of an ``ovnk local`` cluster, many at once.

A NetworkPolicy probe matrix asks, for every (client, server, protocol, port), whether a new
connection gets through; ``kubectl exec ... curl`` costs a process and a kubelet round trip
per cell.  Here one short Python process per client runs in the client pod's network
namespace (``ip netns exec``) and probes all of its targets concurrently: a TCP probe passes
when the connection is established (the server's SYN-ACK came back), a UDP probe when
agnhost netexec's UDP server answered ``hostname``.  What a policy drops times out
(``timeout`` seconds), so one matrix costs about one timeout, not one per cell.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

# run by the client's interpreter inside its network namespace: argv[1] the timeout,
# argv[2] a JSON list of [ip, protocol, port]; prints a JSON list of booleans
_CLIENT = r"""
import json, socket, sys, threading, time
timeout = float(sys.argv[1])
targets = json.loads(sys.argv[2])
results = [False] * len(targets)

def tcp(ip, port):
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect((ip, port))
            return True
        except OSError:
            return False

def udp(ip, port):
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        deadline = time.monotonic() + timeout
        while True:  # resend each 0.5 s: a datagram has no retransmission of its own
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                s.sendto(b"hostname", (ip, port))
                s.settimeout(min(0.5, left))
                s.recvfrom(512)
                return True
            except OSError:
                continue

def run(i, ip, protocol, port):
    results[i] = (tcp if protocol == "tcp" else udp)(ip, port)

threads = [threading.Thread(target=run, args=(i, *t)) for i, t in enumerate(targets)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(results))
"""


@dataclass(frozen=True)
class Probe:
    """One new connection a client tries: to ``ip`` over ``protocol`` (tcp, udp) ``port``."""

    ip: str
    protocol: str
    port: int


class ProbeError(Exception):
    """The client's probing process could not run in its network namespace."""


def probe_from(netns: str, probes: Sequence[Probe], timeout: float = 2.0) -> list[bool]:
    """Whether each of ``probes`` got through, tried at once from network namespace
    ``netns``."""
    if not probes:
        return []
    targets = json.dumps([[p.ip, p.protocol, p.port] for p in probes])
    result = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", _CLIENT,
                             str(timeout), targets], capture_output=True, text=True,
                            timeout=timeout * 3 + 120)
    if result.returncode != 0:
        raise ProbeError(f"probing from {netns}: {result.stderr.strip()}")
    return [bool(ok) for ok in json.loads(result.stdout)]


def probe_all(plan: dict[str, Sequence[Probe]], timeout: float = 2.0
              ) -> dict[str, list[bool]]:
    """``probe_from`` for every (network namespace, probes) of ``plan``, all at once."""
    with ThreadPoolExecutor(max(1, len(plan))) as pool:
        futures = {netns: pool.submit(probe_from, netns, probes, timeout)
                   for netns, probes in plan.items()}
        return {netns: future.result() for netns, future in futures.items()}
